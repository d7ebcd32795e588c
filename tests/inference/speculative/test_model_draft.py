"""A draft model (here the tiny model drafting for itself, at another temperature, so q differs
from p): its q rows are its chain's distributions, it follows the context it is asked about, and
the run's output is still distributed as the plain chain's. Named ``fast``, it is priced as the
fast draft: a run that cannot pay never drafts, unless it asks to keep drafting."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from inference.decoding.generation import Generation, SpeculativeDriver, SpeculativeTotals, TokenStep, Verification
from inference.decoding.loop_params import SpeculativeParams
from inference.sampling import SamplerChain
from inference.speculative import ModelDraft
from inference.speculative.switch_off import cannot_pay

from ..helpers import logits_along
from . import test_loop_tiny as loop

RUNS = 400


def drive(runtime, request, drafter):
    generation = Generation(runtime, request, drafter)
    driver = SpeculativeDriver(runtime, generation)
    driver.start()
    items = []
    while not generation.is_done():
        items += driver.step()
    return items, generation.finish()


def test_q_rows_are_the_draft_chains_distributions_and_the_state_follows_the_context(tiny_runtime, colours):
    params = loop.sampling(colours, seed=1, temperature=2.0)
    drafter = ModelDraft(tiny_runtime.decoder, params, seed=1)
    prompt = tiny_runtime.codec.encode(loop.PROMPT, "completion")
    chain = SamplerChain(params)
    for context in (prompt, prompt + [colours[2]], prompt + [colours[1], colours[0]], prompt[:-1]):
        draft = drafter.propose(context, 3)
        assert len(draft.tokens) == 3 and draft.q.shape == (3, tiny_runtime.shape.vocab_size)
        logits = logits_along(tiny_runtime, context, draft.tokens[:-1])  # a fresh state's, fed plainly
        for i, token in enumerate(draft.tokens):
            expected = chain.distribution(logits[i], list(context) + list(draft.tokens[:i]))
            np.testing.assert_allclose(draft.q[i], expected, atol=1e-4)
            assert draft.q[i][token] > 0 and draft.q[i].sum() == pytest.approx(1.0)


def test_a_draft_model_with_the_targets_chain_is_always_accepted_when_greedy(tiny_runtime, colours):
    request = loop.request(colours, k=3, max_tokens=16, temperature=0.0)
    plain = [i.token_id for i in loop.run(tiny_runtime, replace(request, speculative=None)) if isinstance(i, TokenStep)]
    items, finished = drive(tiny_runtime, request, ModelDraft(tiny_runtime.decoder, request.sampling, seed=0))
    assert [i.token_id for i in items if isinstance(i, TokenStep)] == plain
    assert finished.speculative.accepted == finished.speculative.checked > 0
    assert all(c.q == 1.0 for v in items if isinstance(v, Verification) for c in v.checks)  # a point mass on each draft
    drafter = ModelDraft(tiny_runtime.decoder, request.sampling, seed=0)
    assert drafter.propose(tiny_runtime.codec.encode(loop.PROMPT, "completion"), 3).q is None  # said, not written out


def test_draft_model_samples_are_distributed_as_the_plain_chains(tiny_runtime, colours):
    prompt_ids = tiny_runtime.codec.encode(loop.PROMPT, "completion")
    expected = loop.exact_path_probabilities(tiny_runtime, colours, prompt_ids)
    counts: Counter[tuple[int, ...]] = Counter()
    rejected = 0
    for seed in range(RUNS):
        request = loop.request(colours, seed=20_000 + seed, k=2)
        drafter = ModelDraft(tiny_runtime.decoder, loop.sampling(colours, seed=seed, temperature=0.4), seed=seed)
        items, finished = drive(tiny_runtime, request, drafter)
        assert all(c.q < 1.0 for v in items if isinstance(v, Verification) for c in v.checks)  # q is no point mass
        counts[tuple(i.token_id for i in items if isinstance(i, TokenStep))] += 1
        rejected += finished.speculative.checked - finished.speculative.accepted
    assert rejected > RUNS // 10
    chi2, limit = loop.chi_square(counts, expected, RUNS)
    assert chi2 < limit, (chi2, limit)


def as_fast(request, k: int, switch_off: bool = True):
    """The request with the ``fast`` draft's name (and so its measured cost) at ``k``."""
    return replace(request, speculative=SpeculativeParams("fast", k, switch_off))


def token_steps(items) -> list[int]:
    return [i.token_id for i in items if isinstance(i, TokenStep)]


def test_a_draft_that_cannot_pay_never_drafts_and_done_says_why(tiny_runtime, colours):
    request = as_fast(loop.request(colours, seed=3, max_tokens=12, temperature=0.0), 4)
    reason = cannot_pay("fast", 4)
    assert reason is not None  # the measured costs: tests/inference/speculative/test_switch_off.py
    drafter = ModelDraft(tiny_runtime.decoder, request.sampling, seed=0)
    items, finished = drive(tiny_runtime, request, drafter)
    assert not any(isinstance(i, Verification) or i.drafted for i in items)
    assert drafter.state.length == 0  # the draft model never read the prompt
    assert finished.speculative == SpeculativeTotals(
        drafted=0, checked=0, accepted=0, verifications=0, switched_off_at=0, reason=reason
    )
    assert finished.speculative.to_dict()["reason"] == {"rule": "cannot_pay", "tokens": 5, "steps": reason.steps}
    assert token_steps(items) == token_steps(loop.run(tiny_runtime, replace(request, speculative=None)))


def test_keep_drafting_watches_a_draft_that_cannot_pay(tiny_runtime, colours):
    request = as_fast(loop.request(colours, seed=3, max_tokens=12, temperature=0.0), 4, switch_off=False)
    items, finished = drive(tiny_runtime, request, ModelDraft(tiny_runtime.decoder, request.sampling, seed=0))
    passes = [i for i in items if isinstance(i, Verification)]
    totals = finished.speculative
    assert (totals.switched_off_at, totals.reason) == (None, None)
    # every draft accepted (greedy, the draft is the model itself): 1 token, then 4 + 1, 4 + 1 and the last 1 drafted
    assert (totals.verifications, totals.drafted, totals.checked, totals.accepted) == (len(passes), 9, 9, 9) == (3, 9, 9, 9)
    assert token_steps(items) == token_steps(loop.run(tiny_runtime, replace(request, speculative=None)))
