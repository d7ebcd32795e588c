"""Constrained decoding on the real model: JSON Schema, regex and choice at several temperatures and
seeds, solo and batched; every run ends by end-of-sequence and its text validates (checked with
``json`` + ``jsonschema``, ``re.fullmatch`` and membership, not by the engine's library)."""

from __future__ import annotations

import pytest

from inference.batching.scheduler import Scheduler
from tests.inference.batching.test_scheduler import Listener, assert_same_as_alone, drain, submit_all
from tests.inference.batching.test_scheduler_real import PROB_ROUNDING
from tests.inference.grammar_cases import GRAMMARS, grammar_request, validates
from tests.inference.helpers import collect

pytestmark = pytest.mark.real_model


@pytest.mark.parametrize("kind", list(GRAMMARS))
@pytest.mark.parametrize("temperature, seed", [(0.0, 1), (0.7, 1), (0.7, 2), (1.3, 3)])
def test_solo_runs_end_by_eos_and_validate(real_runtime, kind, temperature, seed):
    _, steps, finished = collect(real_runtime, grammar_request(kind, temperature=temperature, seed=seed))
    sample = finished.first
    assert sample.reason == "eos", sample.text
    assert validates(GRAMMARS[kind][1], sample.text), sample.text
    assert all(step.trace.removed_by(step.token_id) is None for step in steps)


def test_batched_runs_validate_and_give_their_solo_tokens(real_runtime):
    scheduler = Scheduler(real_runtime, max_batch=8)
    listeners = [Listener(grammar_request(kind, temperature=1.0, seed=11)) for kind in GRAMMARS]
    listeners.append(Listener(grammar_request("json_schema", temperature=0.8, seed=12, n=2)))
    submit_all(scheduler, listeners)
    drain(scheduler, listeners)
    for listener in listeners:
        assert listener.error is None
        assert_same_as_alone(real_runtime, listener, PROB_ROUNDING)
        grammar = listener.request.sampling.grammar.to_json()  # type: ignore[union-attr]
        for sample in listener.items[-1].samples:
            assert sample.reason == "eos" and validates(grammar, sample.text), sample.text


def test_the_grammar_benchmark_walks_each_constraints_own_example(real_runtime):
    """Each benchmark text satisfies its constraint (a refused token would raise), with one figure per constraint."""
    from inference.sampling import grammar_bench

    report = grammar_bench.figures(rounds=1)
    assert report["vocab_size"] == real_runtime.shape.vocab_size
    assert set(report["constraints"]) == set(grammar_bench.CONSTRAINTS)
    for figures in report["constraints"].values():
        assert figures["tokens"] >= 2 and figures["mask_us_median"] > 0
