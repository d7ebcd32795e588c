"""Watched tokens: a token the caller names is followed at every step wherever it ranks, with the
same raw and final probability and ``removed_by`` the alternatives carry, and its rank before any
stage (as the alternatives are ordered) and in the final distribution (in pick order)."""

from __future__ import annotations

import numpy as np
import pytest

from inference.decoding.generation import GenerationRequest, check_token_ids
from inference.decoding.loop_params import LoopParams
from inference.errors import ParamError
from inference.sampling import SamplerChain, SamplingParams

from ..helpers import collect
from .helpers import ScriptedRng, logits_for


def watched(params: SamplingParams, probs, watch, **step) -> list[tuple]:
    trace = SamplerChain(params).step(logits_for(probs), [], ScriptedRng(0.0), watch=watch, **step)
    return [(w.id, w.raw_rank, w.rank, w.removed_by) for w in trace.watched]


def test_ranks_and_the_removing_stage_on_a_hand_worked_table():
    # p = 0.1, 0.4, 0.3, 0.2; top_k 2 keeps ids 1 (0.4/0.7) and 2 (0.3/0.7).
    assert watched(SamplingParams(top_k=2), [0.1, 0.4, 0.3, 0.2], [0, 1, 2, 3]) == [
        (0, 4, None, "top_k"),
        (1, 1, 1, None),
        (2, 2, 2, None),
        (3, 3, None, "top_k"),
    ]


def test_the_first_stage_that_removes_a_token_is_named():
    # top_k 3 removes id 3 (0.05); top_p 0.7 then sees 0.5/0.95 = 0.526, 0.3/0.95 = 0.316, 0.158:
    # 0.526 < 0.7 <= 0.842, so it keeps ids 0 and 1 and removes id 2.
    params = SamplingParams(top_k=3, top_p=0.7)
    assert watched(params, [0.5, 0.3, 0.15, 0.05], [3, 2, 1]) == [(3, 4, None, "top_k"), (2, 3, None, "top_p"), (1, 2, 2, None)]


def test_the_final_rank_is_the_pick_order_not_the_raw_order():
    # A bias lifts id 3 (raw 0.1, last) to 1.0 of 1.9: first in the final order.
    params = SamplingParams(logit_bias={3: float(np.log(10.0))})
    trace = SamplerChain(params).step(logits_for([0.4, 0.3, 0.2, 0.1]), [], ScriptedRng(0.0), watch=[3, 0])
    ((lifted, first),) = [trace.watched]
    assert (lifted.raw_rank, lifted.rank, lifted.prob) == (4, 1, pytest.approx(1.0 / 1.9))
    assert (first.raw_rank, first.rank, first.prob) == (1, 2, pytest.approx(0.4 / 1.9))


def test_ties_rank_the_lower_id_first_and_a_token_the_model_ruled_out_has_no_rank():
    logits = np.array([0.0, 0.0, -np.inf, 0.0])
    trace = SamplerChain(SamplingParams()).step(logits, [], ScriptedRng(0.0), watch=[3, 2, 0])
    assert [(w.raw_rank, w.rank, w.raw_prob, w.removed_by) for w in trace.watched] == [
        (3, 3, pytest.approx(1 / 3), None),
        (None, None, 0.0, None),
        (1, 1, pytest.approx(1 / 3), None),
    ]


def test_the_trace_without_a_pick_watches_too_and_nothing_watched_is_empty():
    chain = SamplerChain(SamplingParams(top_k=1))
    assert [w.removed_by for w in chain.trace(logits_for([0.6, 0.4]), watch=[1]).watched] == ["top_k"]
    assert chain.trace(logits_for([0.6, 0.4])).watched == ()
    assert chain.trace(logits_for([0.6, 0.4]), watch=[1]).to_dict()["watched"][0]["raw_rank"] == 2


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(temperature=1.5),
        SamplingParams(temperature=1.0, top_p=0.9, repetition_penalty=1.3),
        SamplingParams(temperature=0.8, top_k=40, min_p=0.05),
    ],
)
def test_watched_numbers_equal_the_alternatives_own_for_tokens_in_the_top_n(params):
    logits = np.random.default_rng(5).standard_normal(20_000) * 2.5
    chain, rng, history = SamplerChain(params), np.random.default_rng(9), []
    watch = np.argsort(-logits, kind="stable")[[0, 2, 4, 300, 19_000]]  # three inside the top 5, two far outside
    for _ in range(50):
        step = chain.step(logits, history, rng, top_n=5, watch=watch)
        assert_matches_alternatives(step)
        history.append(step.token)


def assert_matches_alternatives(step) -> None:
    listed = {a.id: (rank, a) for rank, a in enumerate(step.alternatives, start=1)}
    final_order = sorted((-a.prob, a.id) for a in step.alternatives if a.prob > 0)
    for w in step.watched:
        if w.id in listed:
            rank, alt = listed[w.id]
            assert (w.raw_prob, w.prob, w.removed_by, w.raw_rank) == (alt.raw_prob, alt.prob, alt.removed_by, rank)
        else:
            assert w.raw_rank > len(step.alternatives)
        assert (w.rank is None) == (w.prob == 0.0) == (w.removed_by is not None)
        if w.id == step.token:
            assert (w.raw_prob, w.prob) == (step.raw_prob, step.prob)
        if w.rank is not None:  # at least every listed token ahead of it in pick order is ahead of it
            assert w.rank >= 1 + sum(key < (-w.prob, w.id) for key in final_order)


def test_tiny_model_a_run_watches_what_it_is_asked_and_checks_the_ids(tiny_runtime):
    request = GenerationRequest(
        "Once upon a time",
        sampling=SamplingParams(temperature=1.2, top_k=20, seed=4),
        loop=LoopParams(max_tokens=20),
        top_n=5,
        watch=(1, 7, 40),
    )
    _, steps, _ = collect(tiny_runtime, request)
    for step in steps:
        assert [w.id for w in step.trace.watched] == [1, 7, 40]
        assert_matches_alternatives(step.trace)
    vocab = tiny_runtime.shape.vocab_size
    with pytest.raises(ParamError) as refused:
        check_token_ids(GenerationRequest("x", watch=(3, vocab)), vocab)
    assert refused.value.param == "watch.1"


@pytest.mark.real_model
def test_real_model_why_it_never_said_lyon(real_runtime):
    codec = real_runtime.codec
    lyon, paris = codec.encode(" Lyon", "plain")[0], codec.encode(" Paris", "plain")[0]
    request = GenerationRequest(
        "The capital of France is",
        sampling=SamplingParams(temperature=0.7, top_p=0.8, seed=1),
        loop=LoopParams(max_tokens=12),
        top_n=5,
        watch=(lyon, paris),
    )
    _, steps, _ = collect(real_runtime, request)
    for step in steps:
        assert_matches_alternatives(step.trace)
    first = {w.id: w for w in steps[0].trace.watched}
    assert first[paris].raw_rank < first[lyon].raw_rank  # the model's own view of the two
    assert any(w.removed_by == "top_p" for step in steps for w in step.trace.watched if w.id == lyon)
