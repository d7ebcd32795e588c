"""What the pick at a large vocabulary keeps and spares: the picked token's segment of the draw bar is
the running sum the pick compared the draw with (no pass over the vocabulary for it, wherever the
draw lands), a truncation keeps the very set a vocabulary-sized mask keeps, and the top alternatives
read off the model's float32 logits are those of their float64 copy."""

from __future__ import annotations

import numpy as np
import pytest

from inference.sampling import SamplerChain, SamplingParams
from inference.sampling.candidates import Candidates, Softmax, crossing, prob_prefix

from .helpers import ScriptedRng

EPS = np.finfo(np.float64).eps


def bulk_and_spikes(rng: np.random.Generator, n: int) -> np.ndarray:
    """A broad bulk holding most of the mass and a few tokens far above it: most draws past the
    head land in the bulk, where the pick searches bands."""
    x = rng.normal(0.0, 2.0, n).astype(np.float32)
    x[rng.choice(n, 12, replace=False)] += rng.uniform(6.0, 14.0, 12).astype(np.float32)
    return x


def masked_sum_ahead(e: np.ndarray, pos: int) -> float:
    own = e[pos]
    return float(np.sum(e, where=e > own)) + float(np.sum(e[:pos], where=e[:pos] == own))


@pytest.mark.parametrize("n", (4097, 262_144))
def test_the_picked_tokens_segment_is_the_sum_its_draw_was_compared_with(n):
    rng = np.random.default_rng(n)
    x = bulk_and_spikes(rng, n)
    soft = Softmax(x.astype(np.float64))
    tail = 0
    for u in (0.0, 0.3, 0.7, 0.9, 0.99, 0.999999, *rng.random(6).tolist()):
        trace = SamplerChain(SamplingParams()).step(x, [], ScriptedRng(u), top_n=20)
        start, end = trace.draw_interval
        assert start <= u * (1 + 4 * EPS) and u < end * (1 + 4 * EPS), (u, trace.draw_interval)
        pos = trace.token  # a full set: position == id
        # the same segment a pass over the vocabulary finds, to rounding
        assert start == pytest.approx(masked_sum_ahead(soft.e, pos) / soft.z, rel=1e-12, abs=1e-15)
        assert end - start == pytest.approx(trace.prob, rel=1e-12, abs=1e-15)
        tail += soft.e[pos] < 2.0**-6
    assert tail >= 2  # the band search (past the head) was exercised


def test_the_crossing_is_the_last_token_of_the_prefix_and_its_sum_the_prefix_before_it():
    rng = np.random.default_rng(7)
    for n in (50, 5000, 262_144):
        soft = Softmax(bulk_and_spikes(rng, n).astype(np.float64))
        for u in (0.1, 0.5, 0.95, 0.9999):
            target = u * soft.z
            prefix = prob_prefix(soft.e, target, strict=True)
            position, ahead = crossing(soft.e, target, strict=True, soft=soft)
            assert position == prefix[-1]
            assert ahead == pytest.approx(float(soft.e[prefix[:-1]].sum()), rel=1e-12)
            assert ahead <= target < ahead + soft.e[position] * (1 + 4 * EPS)


def test_a_forced_token_past_the_head_gets_the_vocabularys_own_sums():
    n = 262_144
    x = bulk_and_spikes(np.random.default_rng(3), n)
    soft = Softmax(x.astype(np.float64))
    forced = int(np.flatnonzero(soft.e < 2.0**-6)[100])
    trace = SamplerChain(SamplingParams()).step(x, [], ScriptedRng(0.0), force=forced)
    assert trace.draw_interval[0] == masked_sum_ahead(soft.e, forced) / soft.z


@pytest.mark.parametrize("n", (7, 4097, 262_144))
def test_keeping_positions_is_keeping_their_mask(n):
    rng = np.random.default_rng(n)
    full = Candidates(np.arange(n), rng.normal(size=n), n)
    part = full.keep(rng.random(n) < 0.5)
    for cand in (full, part):
        m = len(cand)
        for size in (1, 2, m // 3, m - 1, m):
            positions = rng.permutation(m)[:size]  # unique, any order
            mask = np.zeros(m, dtype=bool)
            mask[positions] = True
            ours, theirs = cand.keep_positions(positions), cand.keep(mask)
            np.testing.assert_array_equal(ours.ids, theirs.ids)
            np.testing.assert_array_equal(ours.logits, theirs.logits)
        empty = cand.keep_positions(np.array([], dtype=np.int64))  # none: the most likely one, as keep
        np.testing.assert_array_equal(empty.ids, cand.ids[[int(np.argmax(cand.logits))]])


@pytest.mark.parametrize("n", (4097, 262_144))
def test_the_alternatives_from_float32_logits_are_those_of_their_float64_copy(n):
    rng = np.random.default_rng(n + 1)
    x = np.round(rng.normal(0.0, 2.0, n), 1).astype(np.float32)  # many exact ties
    x[rng.choice(n, 30, replace=False)] = x.max()  # ties at the very top too
    chain = SamplerChain(SamplingParams())
    ours = chain.trace(x, [], top_n=40).to_dict()
    theirs = chain.trace(x.astype(np.float64), [], top_n=40).to_dict()
    assert ours == theirs
    assert [a["id"] for a in ours["alternatives"][:30]] == sorted(a["id"] for a in ours["alternatives"][:30])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_a_set_over_the_models_own_logits_is_the_set_over_their_float64_copy(dtype):
    rng = np.random.default_rng(11)
    x = (rng.normal(0.0, 3.0, 5000) * (1 if dtype != np.int32 else 10)).astype(dtype)
    before = x.copy()
    ids = np.arange(len(x), dtype=np.int64)
    top, low = float(x.max()), float(x.min())
    ours = Candidates.of_model(ids, x, (top, low))
    theirs = Candidates(ids, x.astype(np.float64), len(x), (top, low))
    assert ours.softmax.d.tobytes() == theirs.softmax.d.tobytes()
    assert ours.softmax.e.tobytes() == theirs.softmax.e.tobytes() and ours.softmax.z == theirs.softmax.z
    assert ours.softmax.entropy == theirs.softmax.entropy
    positions = rng.choice(len(x), 40, replace=False)
    np.testing.assert_array_equal(ours.logits_at(positions), theirs.logits[positions])
    np.testing.assert_array_equal(ours.keep_positions(positions).logits, theirs.keep_positions(positions).logits)
    np.testing.assert_array_equal(ours.logits, theirs.logits)  # built on first read
    assert ours.logits.dtype == np.float64 and not ours.logits.flags.writeable
    np.testing.assert_array_equal(x, before)  # read, never written
    assert x.flags.writeable


@pytest.mark.parametrize("params", [SamplingParams(), SamplingParams(temperature=0.0)], ids=["defaults", "greedy"])
def test_at_the_defaults_and_greedy_no_float64_copy_of_the_logits_is_made(params):
    x = bulk_and_spikes(np.random.default_rng(5), 262_144)
    x[[9, 4]] = x.max()  # a tie at the top: greedy takes the lower id
    trace = SamplerChain(params).step(x, [], ScriptedRng(0.5), top_n=20, watch=[7])
    raw = trace.lookup.raw
    assert raw._logits is None and raw._source is x  # the softmax converted and shifted in one array
    reference = SamplerChain(params).step(x.astype(np.float64), [], ScriptedRng(0.5), top_n=20, watch=[7])
    assert trace.to_dict() == reference.to_dict()
    if params.greedy:
        assert trace.token == 4
