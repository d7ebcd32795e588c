"""The shortcuts that keep the chain cheap at Gemma's 262,144-token vocabulary give what the plain
computations give: the top positions are a full stable sort's head, and the pick's probability
bands are the sixteenth octaves ``np.frexp`` defines, boundaries included."""

from __future__ import annotations

import numpy as np
import pytest

from inference.sampling.candidates import _bands, crossing, prob_prefix, top_positions

GEMMA_VOCAB = 262_144


def frexp_bands(r: np.ndarray) -> np.ndarray:
    """The bands as ``prob_prefix`` first defined them (from ``np.frexp``)."""
    mantissa, exponent = np.frexp(r)
    band = (1 - exponent) * 16 + ((1.0 - mantissa) * 32).astype(np.int64)
    band[r == 0] = 16 * 1100
    return band


@pytest.mark.parametrize("k", [1, 5, 20, 100])
def test_top_positions_is_a_stable_sorts_head_with_ties_and_spikes(k):
    rng = np.random.default_rng(k)
    logits = np.round(rng.normal(0.0, 2.0, GEMMA_VOCAB), 1)  # [V]: many exact ties
    logits[rng.choice(GEMMA_VOCAB, 12, replace=False)] += 9.0
    logits[rng.choice(GEMMA_VOCAB, 1000, replace=False)] = -np.inf
    expected = np.argsort(-logits, kind="stable")[:k]
    np.testing.assert_array_equal(top_positions(logits, k), expected)


def test_top_positions_on_a_flat_vocabulary_falls_back_exactly():
    logits = np.zeros(GEMMA_VOCAB)  # every block's maximum is the k-th: the whole vocabulary ties
    logits[-3:] = 1.0  # the largest in the tail past the last whole block
    np.testing.assert_array_equal(top_positions(logits, 20), np.argsort(-logits, kind="stable")[:20])


def test_bands_are_frexps_sixteenth_octaves_boundaries_included():
    rng = np.random.default_rng(0)
    octaves = 2.0 ** -np.arange(0, 1070, dtype=np.float64)  # down to subnormals
    edges = np.concatenate([octaves * (m / 32) for m in range(16, 33)])  # exact band edges
    near = np.concatenate([np.nextafter(edges, 0.0), np.nextafter(edges, 1.0)])
    r = np.concatenate([edges, near, rng.random(10_000), [0.0, 1.0, 5e-324]])
    r = r[(r >= 0) & (r <= 1)]
    ours, theirs = _bands(r), frexp_bands(r)
    # Ordered the same way everywhere; the same partition (equal up to relabelling) for zero and every
    # normal ratio. Subnormal ratios (below 2**-1022 of the largest weight, no mass a running sum that
    # holds the largest weight can see) are banded by their bits instead of by octaves.
    order = np.argsort(theirs, kind="stable")
    assert (np.diff(ours[order]) >= 0).all()
    normal = (r == 0) | (r >= np.finfo(np.float64).tiny)
    assert np.array_equal(np.unique(ours[normal], return_inverse=True)[1], np.unique(theirs[normal], return_inverse=True)[1])


@pytest.mark.parametrize("u", [0.05, 0.5, 0.9, 0.999])
def test_the_pick_prefix_ends_where_the_sorted_running_sum_crosses(u):
    rng = np.random.default_rng(int(u * 1000))
    w = np.exp(rng.normal(0.0, 2.0, GEMMA_VOCAB))  # a bulk with most of the mass: the band path
    head = prob_prefix(w, u * w.sum(), strict=True)
    order = np.argsort(-w, kind="stable")
    crossing = int(np.searchsorted(np.cumsum(w[order]), u * w.sum(), side="right"))
    assert head[-1] == order[crossing]  # the token picked (sums in another order: same token here)
    assert set(head.tolist()) == set(order[: crossing + 1].tolist())
    assert prob_prefix(w, u * w.sum(), strict=True, last_only=True)[-1] == head[-1]


@pytest.mark.parametrize("u", [0.7, 0.8, 0.9, 0.99])
@pytest.mark.parametrize("strict", [True, False])
def test_a_prefix_past_the_head_is_found_in_the_neck_as_a_full_sort_finds_it(u, strict, monkeypatch):
    # like a model's: a few likely tokens (the head), a few hundred within 2^-12 of the top holding
    # most of the rest (the neck) and a deep bulk; the neck's tokens tie in pairs
    rng = np.random.default_rng(int(u * 100) + strict)
    w = np.exp(rng.normal(-20.0, 2.0, GEMMA_VOCAB))  # [V] the bulk
    w[:5] = [1.0, 0.5, 0.3, 0.2, 0.1]
    neck = rng.choice(np.arange(5, GEMMA_VOCAB), 300, replace=False)
    w[neck] = np.repeat(rng.uniform(2.0**-11, 2.0**-7, 150), 2)
    target = u * w.sum()
    order = np.argsort(-w, kind="stable")
    cum = np.cumsum(w[order])
    k = int(np.searchsorted(cum, target, side="right" if strict else "left"))
    assert 5 <= k < 305  # the crossing lies past the head, in the neck
    monkeypatch.setattr("inference.sampling.candidates._bands", lambda r: pytest.fail("searched the bands"))
    np.testing.assert_array_equal(prob_prefix(w, target, strict), order[: k + 1])
    position, ahead = crossing(w, target, strict)
    assert position == order[k] and ahead == cum[k - 1]
