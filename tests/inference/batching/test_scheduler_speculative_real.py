"""A speculative greedy run in the batch scheduler on the real model, beside plain runs: the same
tokens as without speculation, with many drafts accepted on code, and its neighbours' tokens and
draws the ones they give without it."""

from __future__ import annotations

import pytest

from inference.batching.scheduler import Scheduler
from inference.decoding.generation import GenerationRequest, TokenStep, Verification, run
from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.sampling import SamplingParams
from tests.inference.speculative.test_greedy_real import CODE

from .test_scheduler import Listener, drain, request, submit_all, token_ids

pytestmark = pytest.mark.real_model

TOKENS = 80


def code(speculative: SpeculativeParams | None) -> GenerationRequest:
    return GenerationRequest(
        CODE,
        sampling=SamplingParams(temperature=0.0),
        loop=LoopParams(max_tokens=TOKENS, ignore_eos=True),
        speculative=speculative,
    )


def neighbours() -> list[Listener]:
    return [
        Listener(request("Once upon a time", temperature=0.8, seed=42, max_tokens=40)),
        Listener(request("The capital of France is", max_tokens=60)),
    ]


def test_greedy_speculation_batched_beside_plain_runs_gives_the_plain_tokens(real_runtime):
    plain = [item.token_id for item in run(real_runtime, code(None)) if isinstance(item, TokenStep)]
    scheduler = Scheduler(real_runtime, max_batch=8)
    speculative = Listener(code(SpeculativeParams(k=4)))
    beside = neighbours()
    submit_all(scheduler, [beside[0], speculative, beside[1]])
    drain(scheduler, [speculative, *beside])
    assert speculative.error is None and len(plain) == TOKENS
    assert [token for _, token in token_ids(speculative.items)] == plain
    totals = speculative.items[-1].speculative
    verifications = [item for item in speculative.items if isinstance(item, Verification)]
    assert totals.accepted >= 16 and len(verifications) < TOKENS  # lookup pays on code: fewer passes than tokens
    assert totals.switched_off_at is None
    alone = neighbours()
    scheduler_alone = Scheduler(real_runtime, max_batch=8)
    submit_all(scheduler_alone, alone)
    drain(scheduler_alone, alone)
    for ours, theirs in zip(beside, alone):
        assert token_ids(ours.items) == token_ids(theirs.items)
        assert [s.trace.draw for s in ours.steps] == [s.trace.draw for s in theirs.steps]
