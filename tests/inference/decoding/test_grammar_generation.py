"""Constrained decoding through the generation loop and the batch scheduler on the tiny random model:
whatever its (gibberish) preferences, every run that ends by end-of-sequence validates, a
``max_tokens`` cut says so, forced prefix tokens advance the constraint, and a batch gives each
run what it gives alone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from inference.batching.scheduler import Scheduler
from inference.decoding.generation import Generation
from inference.errors import ParamError
from tests.inference.batching.test_scheduler import Listener, assert_same_as_alone, drain, submit_all
from tests.inference.grammar_cases import GRAMMARS, grammar_request, validates
from tests.inference.helpers import collect

MAX_TOKENS = {"json_schema": 200, "regex": 40, "choice": 10}  # above each constraint's longest text in tokens


@pytest.mark.parametrize("kind", list(GRAMMARS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_run_ends_by_eos_with_text_that_validates(tiny_runtime, kind, seed):
    request = grammar_request(kind, temperature=1.0, seed=seed, max_tokens=MAX_TOKENS[kind], mode="completion")
    _, steps, finished = collect(tiny_runtime, request)
    sample = finished.first
    assert sample.reason == "eos", sample.text
    assert validates(GRAMMARS[kind][1], sample.text), sample.text
    for step in steps:
        assert step.trace.stages[0].name == "grammar"
        assert step.trace.removed_by(step.token_id) is None  # the picked token was allowed
    eos_steps = [s for s in steps if s.token_id in tiny_runtime.codec.eos_ids]
    assert len(eos_steps) == 1 and eos_steps[0] is steps[-1]


def test_a_max_tokens_cut_is_reported_and_the_text_is_incomplete(tiny_runtime):
    request = grammar_request("json_schema", temperature=1.0, seed=1, max_tokens=3, mode="completion")
    _, _, finished = collect(tiny_runtime, request)
    assert finished.first.reason == "max_tokens"
    assert not validates(GRAMMARS["json_schema"][1], finished.first.text)


def test_forced_prefix_tokens_advance_the_constraint(tiny_runtime):
    prefix = tuple(tiny_runtime.codec.encode("Rome", "plain"))
    request = replace(grammar_request("regex", temperature=1.0, seed=4, max_tokens=40, mode="completion"), prefix_tokens=prefix)
    _, steps, finished = collect(tiny_runtime, request)
    assert [s.token_id for s in steps[: len(prefix)]] == list(prefix)
    assert finished.first.reason == "eos" and finished.first.text.startswith("Rome")
    assert validates(GRAMMARS["regex"][1], finished.first.text)


def test_a_forced_prefix_the_constraint_refuses_is_an_error(tiny_runtime):
    prefix = tuple(tiny_runtime.codec.encode("rome", "plain"))  # the pattern starts with a capital
    request = replace(grammar_request("regex", temperature=1.0, seed=4, mode="completion"), prefix_tokens=prefix)
    with pytest.raises(ParamError) as err:
        Generation(tiny_runtime, request)  # before the run starts: nothing is streamed
    assert err.value.param == "prefix_tokens.0"  # the first token the constraint refuses, named in plain words
    assert err.value.message == "the grammar does not allow 'rome' at that point of the text, so it cannot be forced there"


def test_a_prefix_refused_after_allowed_tokens_names_the_refused_one(tiny_runtime):
    """A branch on an alternative the grammar removed: the kept tokens pass, the alternative is named."""
    prefix = (*tiny_runtime.codec.encode("Rome", "plain"), *tiny_runtime.codec.encode("7", "plain"))
    request = replace(grammar_request("regex", temperature=1.0, seed=4, mode="completion"), prefix_tokens=prefix, branched=True)
    with pytest.raises(ParamError) as err:
        Generation(tiny_runtime, request)
    assert err.value.param == f"prefix_tokens.{len(prefix) - 1}" and "'7'" in err.value.message
    assert "Parser" not in err.value.message and "byte" not in err.value.message


def test_batched_constrained_runs_give_what_they_give_alone(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=8)
    listeners = [
        Listener(grammar_request(kind, temperature=1.0, seed=5, max_tokens=MAX_TOKENS[kind], mode="completion"))
        for kind in GRAMMARS
    ]
    listeners.append(Listener(grammar_request("choice", temperature=0.7, seed=6, max_tokens=10, mode="completion", n=2)))
    submit_all(scheduler, listeners)
    drain(scheduler, listeners)
    for listener in listeners:
        assert listener.error is None
        assert_same_as_alone(tiny_runtime, listener)
        grammar = listener.request.sampling.grammar.to_json()  # type: ignore[union-attr]
        for sample in listener.items[-1].samples:
            assert sample.reason == "eos" and validates(grammar, sample.text), sample.text


def test_the_vocabulary_is_compiled_once_per_runtime_and_reads_a_space_as_a_space(tiny_runtime):
    vocabulary = tiny_runtime.codec.token_texts().grammar_vocabulary
    assert tiny_runtime.codec.token_texts().grammar_vocabulary is vocabulary
    space = tiny_runtime.codec.encode(" ", "plain")
    assert vocabulary.tokenizer.decode_bytes(space) == b" "  # not U+0120: the ByteFallback trap (docs/sampling.md)
    assert set(vocabulary.eos_ids) == set(tiny_runtime.codec.eos_ids)
