"""Grammar × speculative decoding on the real model (issue 30's matrix): drafts are judged by the
whole chain, the grammar included, so a draft the constraint forbids is rejected and every token
kept is one the grammar allows. Greedy: the tokens are the plain constrained run's; sampled: the
run still ends by itself in JSON the schema accepts. Either way the totals are the records' counts
(``SpeculativeTotals``: drafted, checked, accepted, passes)."""

from __future__ import annotations

import pytest

from inference.decoding.generation import GenerationRequest, TokenStep, Verification, run
from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.sampling import SamplingParams
from tests.inference.decoding.test_grammar_examples_real import EXAMPLES
from tests.inference.grammar_cases import validates
from tests.js import run_js

pytestmark = pytest.mark.real_model

# The answer copies JSON from its prompt, so prompt lookup drafts it (and the closed schema's `job`
# forbids the prompt's "pilot": a draft the grammar must reject).
PROMPT = 'Repeat this JSON exactly: {"name": "Ana", "age": 31, "job": "pilot"}'


@pytest.fixture(scope="module")
def grammar() -> dict:
    return {"type": "json_schema", "schema": run_js(EXAMPLES)["schema"]}


def request(grammar: dict, temperature: float, speculative: SpeculativeParams | None) -> GenerationRequest:
    return GenerationRequest(
        PROMPT,
        mode="chat",
        sampling=SamplingParams(grammar=grammar, temperature=temperature, seed=5),
        loop=LoopParams(max_tokens=48),
        speculative=speculative,
    )


def check(items: list, grammar: dict) -> list[int]:
    finished = items[-1]
    steps = [i for i in items if isinstance(i, TokenStep)]
    passes = [i for i in items if isinstance(i, Verification)]
    assert finished.reason == "eos" and validates(grammar, finished.text), finished.text
    assert all(step.trace.removed_by(step.token_id) is None for step in steps)  # every token kept, drafted or not, is allowed
    totals = finished.speculative
    assert passes and (totals.drafted, totals.checked, totals.accepted, totals.verifications) == (
        sum(len(v.drafted) for v in passes),
        sum(len(v.checks) for v in passes),
        sum(v.accepted for v in passes),
        len(passes),
    )
    assert totals.accepted > 0  # lookup drafted the copied JSON and the model kept some of it
    by_index = {step.index: step for step in steps}
    refused = [
        check
        for v in passes
        for i, check in enumerate(v.checks)
        if not check.accepted and by_index[v.index + i].trace.removed_by(check.draft) == "grammar"
    ]
    assert refused and all(check.p == 0.0 for check in refused)  # the prompt's "pilot": drafted, refused by the grammar
    return [step.token_id for step in steps]


def test_greedy_speculative_with_a_grammar_is_the_plain_constrained_run(real_runtime, grammar):
    plain = [i.token_id for i in run(real_runtime, request(grammar, 0.0, None)) if isinstance(i, TokenStep)]
    tokens = check(list(run(real_runtime, request(grammar, 0.0, SpeculativeParams(k=4)))), grammar)
    assert tokens == plain


def test_sampled_speculative_with_a_grammar_ends_in_valid_json(real_runtime, grammar):
    check(list(run(real_runtime, request(grammar, 0.8, SpeculativeParams(k=4, switch_off=False)))), grammar)
