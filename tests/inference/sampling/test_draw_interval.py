"""The chosen token's draw interval: its segment [start, end) of the final probabilities stacked in
pick order (final probability descending, ties lower id first). The draw u that picked a token lies
in it, wherever the token ranks, inside the top N alternatives or far outside them."""

from __future__ import annotations

import numpy as np
import pytest

from inference.decoding.generation import GenerationRequest
from inference.decoding.loop_params import LoopParams
from inference.sampling import SamplerChain, SamplingParams

from ..helpers import collect
from .helpers import ScriptedRng, logits_for

# A slack of a few float64 roundings: the picked token's segment is the pick's own running sum, but
# divided by z; a forced token's is summed by another pass.
ROUNDING = 1e-12


def assert_draw_inside(trace) -> None:
    start, end = trace.draw_interval
    assert start - ROUNDING <= trace.draw < end + ROUNDING, (trace.token, trace.draw, trace.draw_interval)
    assert end - start == pytest.approx(trace.prob, abs=ROUNDING)


@pytest.mark.parametrize("u, token, interval", [(0.0, 1, (0.0, 0.6)), (0.65, 2, (0.6, 0.9)), (0.95, 0, (0.9, 1.0))])
def test_the_interval_is_the_tokens_place_in_the_pick_order(u, token, interval):
    # p = 0.1, 0.6, 0.3 in pick order: id 1 [0, 0.6), id 2 [0.6, 0.9), id 0 [0.9, 1).
    step = SamplerChain(SamplingParams()).step(logits_for([0.1, 0.6, 0.3]), [], ScriptedRng(u), top_n=3)
    assert step.token == token
    assert step.draw_interval == pytest.approx(interval)
    assert step.to_dict()["draw_interval"] == pytest.approx(list(interval))


def test_a_token_outside_the_top_n_gets_its_real_place_not_the_one_after_the_listed_tokens():
    # Listed: id 0 only (0.4). The pick walks 0.4, 0.3, 0.2, 0.1; u = 0.95 picks id 3 at [0.9, 1).
    step = SamplerChain(SamplingParams()).step(logits_for([0.4, 0.3, 0.2, 0.1]), [], ScriptedRng(0.95), top_n=1)
    assert [a.id for a in step.alternatives] == [0] and step.token == 3
    assert step.draw_interval == pytest.approx((0.9, 1.0))


def test_ties_go_to_the_lower_id_first():
    chain = SamplerChain(SamplingParams())
    assert chain.step(np.zeros(4), [], ScriptedRng(0.49)).draw_interval == pytest.approx((0.25, 0.5))
    assert chain.step(np.zeros(4), [], ScriptedRng(0.51)).draw_interval == pytest.approx((0.5, 0.75))


def test_the_order_is_the_final_distributions_not_the_raw_one():
    # A bias lifts id 3 (raw 0.1) above everything: the final order starts with it.
    params = SamplingParams(logit_bias={3: float(np.log(10.0))})  # 0.1 * 10 = 1.0 of 1.9 in all
    step = SamplerChain(params).step(logits_for([0.4, 0.3, 0.2, 0.1]), [], ScriptedRng(0.6), top_n=4)
    assert step.token == 0  # order: 3 (1/1.9), 0 (0.4/1.9), ...; 0.6 lies past 0.526
    assert step.draw_interval == pytest.approx((1.0 / 1.9, 1.4 / 1.9))


def test_a_forced_token_has_its_place_and_a_removed_one_none():
    chain = SamplerChain(SamplingParams(top_k=2))
    logits = logits_for([0.1, 0.6, 0.3])
    forced = chain.step(logits, [], ScriptedRng(0.1), force=2)  # u picks id 1; id 2 is taken anyway
    assert forced.draw_interval == pytest.approx((2 / 3, 1.0))
    assert not forced.draw_interval[0] <= forced.draw < forced.draw_interval[1]
    assert chain.step(logits, [], ScriptedRng(0.1), force=0).draw_interval is None  # top_k removed it
    assert chain.trace(logits, []).draw_interval is None  # nothing picked


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(temperature=1.5),
        SamplingParams(temperature=1.0, top_p=0.95, repetition_penalty=1.3),
        SamplingParams(temperature=0.8, top_k=40, min_p=0.02),
    ],
)
def test_the_draw_lies_in_the_interval_for_every_token_of_a_seeded_run(params):
    # A vocabulary above 4,096 tokens takes the pick's banded search, not a full sort.
    logits = np.random.default_rng(7).standard_normal(20_000) * 2.5
    chain, rng, history = SamplerChain(params), np.random.default_rng(11), []
    for _ in range(200):
        step = chain.step(logits, history, rng, top_n=5)
        assert_draw_inside(step)
        history.append(step.token)


def test_tiny_model_every_token_of_a_seeded_run(tiny_runtime):
    request = GenerationRequest(
        "Once upon a time", sampling=SamplingParams(temperature=1.5, seed=20), loop=LoopParams(max_tokens=40), top_n=5
    )
    _, steps, _ = collect(tiny_runtime, request)
    outside = 0
    for step in steps:
        assert_draw_inside(step.trace)
        outside += step.token_id not in {a.id for a in step.trace.alternatives}
    assert outside > 0  # the random model's flat distribution picks outside the top 5


@pytest.mark.real_model
def test_real_model_every_token_including_those_outside_the_top_n(real_runtime):
    # The setting: T 1.5, five alternatives, 60 tokens.
    request = GenerationRequest(
        "The capital of France is", sampling=SamplingParams(temperature=1.5, seed=3), loop=LoopParams(max_tokens=60), top_n=5
    )
    _, steps, _ = collect(real_runtime, request)
    outside = 0
    for step in steps:
        assert_draw_inside(step.trace)
        outside += step.token_id not in {a.id for a in step.trace.alternatives}
    assert outside > 0
