"""Speculative runs in the batch scheduler, on the tiny model: each verifies its drafts in a call of
its own while the other runs decode, gives outputs distributed exactly as the plain chain's (a
chi-square test of many seeded runs, batched with plain neighbours), leaves its neighbours' outputs
as they are without it, rolls its slot back past rejected drafts, stops drafting when its
drafts are mostly rejected (unless it asks to keep drafting), and never starts when its draft
cannot pay."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from inference.batching.scheduler import Scheduler
from inference.decoding.generation import Finished, GenerationRequest, TokenStep, Verification, run
from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.sampling import SamplingParams
from inference.speculative import DraftSources
from inference.speculative.switch_off import SWITCH_OFF_AFTER, SwitchedOff, cannot_pay, pass_cost
from tests.inference.speculative.conftest import COLOURS
from tests.inference.speculative.test_loop_tiny import RUNS, chi_square, exact_path_probabilities
from tests.inference.speculative.test_loop_tiny import request as colour_request

from ..helpers import single_token
from .test_scheduler import Listener, drain, request, submit_all, token_ids

WORDS = (  # more than SCATTER words, most of them one token each
    "red green blue cat dog sun moon tree house water fire stone bird fish king queen road river book door"
    " window table chair city town light dark cold warm apple bread milk salt rain snow wind song dance"
)


@pytest.fixture(scope="module")
def colours(tiny_runtime) -> list[int]:
    return [single_token(tiny_runtime, text) for text in COLOURS]


def test_speculative_runs_batched_are_distributed_as_the_plain_chains(tiny_runtime, colours):
    prompt_ids = tiny_runtime.codec.encode(colour_request(colours).prompt, "completion")
    expected = exact_path_probabilities(tiny_runtime, colours, prompt_ids)
    scheduler = Scheduler(tiny_runtime, max_batch=8)
    speculative = [Listener(colour_request(colours, seed=20_000 + seed, k=3)) for seed in range(RUNS)]
    plain = [Listener(request("Once upon a time", temperature=1.0, seed=seed, max_tokens=40)) for seed in range(4)]
    submit_all(scheduler, plain[:2] + speculative + plain[2:])  # plain runs decode beside the first and the last
    drain(scheduler, plain + speculative)
    counts: Counter[tuple[int, ...]] = Counter()
    rejected = 0
    for listener in speculative:
        assert listener.error is None
        counts[tuple(token for _, token in token_ids(listener.items))] += 1
        totals = listener.items[-1].speculative
        rejected += totals.checked - totals.accepted
    assert rejected > RUNS // 4  # the rule's both branches ran many times
    chi2, limit = chi_square(counts, expected, RUNS)
    assert chi2 < limit, (chi2, limit)


def test_a_speculative_neighbour_leaves_the_other_rows_outputs_as_they_are(tiny_runtime, colours):
    def plain_runs() -> list[Listener]:
        return [
            Listener(request("Once upon a time", temperature=1.0, seed=3, max_tokens=30)),
            Listener(request("The capital of France is", max_tokens=30)),
            Listener(request("Write a haiku", temperature=0.7, seed=9, n=2, max_tokens=30)),
        ]

    alone, beside = plain_runs(), plain_runs()
    drain_together(Scheduler(tiny_runtime, max_batch=8), alone)
    neighbour = Listener(colour_request(colours, seed=5, k=4, max_tokens=30))
    drain_together(Scheduler(tiny_runtime, max_batch=8), [beside[0], neighbour, *beside[1:]])
    assert sum(isinstance(item, Verification) for item in neighbour.items) > 3  # it verified drafts in those steps
    for ours, theirs in zip(beside, alone):
        steps, solo_steps = ([item for item in listener.items if isinstance(item, TokenStep)] for listener in (ours, theirs))
        assert token_ids(steps) == token_ids(solo_steps)
        assert [s.trace.draw for s in steps] == [s.trace.draw for s in solo_steps]
        np.testing.assert_array_equal([s.trace.chosen.raw_prob for s in steps], [s.trace.chosen.raw_prob for s in solo_steps])


def drain_together(scheduler: Scheduler, listeners: list[Listener]) -> None:
    submit_all(scheduler, listeners)
    drain(scheduler, listeners)
    assert all(listener.error is None for listener in listeners)


def test_a_speculative_run_batched_gives_its_solo_greedy_tokens_and_its_slot_holds_them(tiny_runtime, colours):
    scheduler = Scheduler(tiny_runtime, max_batch=4)
    speculative = Listener(colour_request(colours, k=4, max_tokens=40, temperature=0.0))
    plain = Listener(request("Once upon a time", max_tokens=60))
    submit_all(scheduler, [plain, speculative])
    while not speculative.done:
        scheduler.step()
    solo = [
        i.token_id
        for i in run(tiny_runtime, colour_request(colours, k=None, max_tokens=40, temperature=0.0))
        if isinstance(i, TokenStep)
    ]
    assert [token for _, token in token_ids(speculative.items)] == solo
    assert any(isinstance(i, Verification) and i.accepted for i in speculative.items)


def test_a_rejected_draft_leaves_the_slot_as_a_plain_runs(tiny_runtime, colours):
    scheduler = Scheduler(tiny_runtime, max_batch=2)
    speculative = Listener(colour_request(colours, seed=3, k=3, max_tokens=40))
    submit_all(scheduler, [Listener(request("Once upon a time", max_tokens=80)), speculative])
    while not any(isinstance(i, Verification) and i.corrected is not None for i in speculative.items):
        scheduler.step()
        assert not speculative.done, "no draft was rejected in 40 tokens"
    (batch_run,) = [r for r in scheduler._runs.values() if r.program.request.speculative is not None]
    fed = batch_run.program.prompt_ids + batch_run.program.samples[0].generated[:-1]  # the corrected token is pending
    assert batch_run.length == len(fed)
    plain = tiny_runtime.decoder.new_state()
    plain.append_tokens(fed)
    slot = batch_run.slots[0]
    for ours, theirs in zip(scheduler.runner.cache.buffers, plain._past.buffers):
        np.testing.assert_allclose(ours[slot, :, : len(fed)], theirs[0, :, : len(fed)], rtol=1e-4, atol=1e-5)


# -- switching off -------------------------------------------------------------------------------

SCATTER = 32  # tokens the run draws among uniformly: a lookup draft is accepted with p ≈ 1/32


def scattered(runtime, seed: int, max_tokens: int = 60) -> GenerationRequest:
    """A run drawing uniformly among ``SCATTER`` one-token words after a prompt that holds them all
    twice, so prompt lookup always finds a match to draft from and the model seldom agrees with it."""
    words = [w for w in (f" {word}" for word in WORDS.split()) if len(runtime.codec.encode(w, "plain")) == 1][:SCATTER]
    assert len(words) == SCATTER
    ids = [single_token(runtime, word) for word in words]
    return GenerationRequest(
        "".join(words * 2),
        sampling=SamplingParams(temperature=1.0, seed=seed, logit_bias={i: 100.0 for i in ids}),
        loop=LoopParams(max_tokens=max_tokens, ignore_eos=True),
        speculative=SpeculativeParams(k=4),
    )


def assert_switched_off(items: list) -> None:
    """The run made its 60 tokens, stopped drafting where ``done`` says, and only once the rule held."""
    finished = items[-1]
    assert isinstance(finished, Finished)
    totals = finished.speculative
    at = totals.switched_off_at
    assert at is not None and len(finished.first.token_ids) == 60
    verifications = [item for item in items if isinstance(item, Verification)]
    assert (totals.drafted, totals.checked, totals.verifications) == (
        sum(len(v.drafted) for v in verifications),
        sum(len(v.checks) for v in verifications),
        len(verifications),
    )

    def holds(passes: list[Verification]) -> bool:  # switch_off's rule, worked out from the records
        made = sum(v.accepted + 1 for v in passes)
        return sum(len(v.checks) for v in passes) >= SWITCH_OFF_AFTER and made < sum(
            pass_cost(len(v.drafted) + 1) for v in passes
        )

    assert holds(verifications) and not holds(verifications[:-1])
    made, cost = sum(v.accepted + 1 for v in verifications), sum(pass_cost(len(v.drafted) + 1) for v in verifications)
    assert totals.reason == SwitchedOff("low_acceptance", made, round(cost, 2))
    assert verifications[-1].index + verifications[-1].accepted + 1 == at  # plain from the token after the last pass
    assert not any(item.drafted for item in items if isinstance(item, TokenStep) and item.index >= at)


def test_low_acceptance_switches_speculation_off_solo(tiny_runtime):
    assert_switched_off(list(run(tiny_runtime, scattered(tiny_runtime, seed=1))))


def test_low_acceptance_switches_speculation_off_in_the_batch_and_the_run_goes_on_plainly(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=4)
    listeners = [Listener(scattered(tiny_runtime, seed=2)), Listener(request("Once upon a time", max_tokens=70))]
    drain_together(scheduler, listeners)
    assert_switched_off(listeners[0].items)


def test_keep_drafting_is_never_switched_off_solo_or_batched(tiny_runtime):
    kept = scattered(tiny_runtime, seed=1)
    kept = replace(kept, speculative=replace(kept.speculative, switch_off=False))
    scheduler = Scheduler(tiny_runtime, max_batch=4)
    batched = Listener(kept)
    drain_together(scheduler, [batched, Listener(request("Once upon a time", max_tokens=70))])
    for items in (list(run(tiny_runtime, kept)), batched.items):
        totals = items[-1].speculative
        assert (totals.switched_off_at, totals.reason) == (None, None) and len(items[-1].first.token_ids) == 60
        assert totals.verifications + totals.accepted == 59  # every token after the first came from a verification pass
        assert totals.accepted < totals.checked // 4  # what the rule would have stopped


def test_a_draft_that_cannot_pay_never_drafts_in_the_batch_and_one_kept_drafting_does(tiny_runtime, colours):
    drafts = DraftSources(tiny_runtime, Path("models"), lambda directory: tiny_runtime)  # the tiny model as `fast`
    greedy = colour_request(colours, max_tokens=20, temperature=0.0)
    off = Listener(replace(greedy, speculative=SpeculativeParams("fast", 4)))
    kept = Listener(replace(greedy, speculative=SpeculativeParams("fast", 4, switch_off=False)))
    drain_together(
        Scheduler(tiny_runtime, max_batch=4, drafts=drafts), [off, kept, Listener(request("Once upon a time", max_tokens=30))]
    )
    solo = [i.token_id for i in run(tiny_runtime, replace(greedy, speculative=None)) if isinstance(i, TokenStep)]
    assert not any(isinstance(i, Verification) for i in off.items)
    assert off.items[-1].speculative.reason == cannot_pay("fast", 4) is not None
    assert off.items[-1].speculative.switched_off_at == 0
    assert sum(isinstance(i, Verification) for i in kept.items) == kept.items[-1].speculative.verifications > 0
    assert kept.items[-1].speculative.accepted == kept.items[-1].speculative.checked  # the draft is the model itself
    for listener in (off, kept):
        assert [token for _, token in token_ids(listener.items)] == solo
