"""The passes the chain spares (the softmax's extremes known from the raw logits, the pick's head
found once, the draw interval summed over the head) give the very floats of the full passes they
replace, on adversarial logits: ties, -inf, huge values, spans past exp's range, 262k tokens."""

from __future__ import annotations

import numpy as np
import pytest

from inference.sampling import SamplerChain, SamplingParams
from inference.sampling.candidates import Candidates, Softmax, prob_prefix, sum_at

VOCABS = (5, 4097, 262_144)


def adversarial_logits(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    ties = np.round(rng.normal(0.0, 1.5, n)).astype(np.float32)  # a few values, each held by many tokens
    spiked = rng.normal(0.0, 2.0, n).astype(np.float32)
    spiked[rng.choice(n, min(n, 12), replace=False)] += 12.0
    flat = np.zeros(n, dtype=np.float32)
    flat[: min(n, 3)] = 4.0
    wide = rng.normal(0.0, 600.0, n).astype(np.float32)  # most of exp(d) below its fast floor
    huge = rng.normal(0.0, 1.0, n) * 1e299
    return {"ties": ties, "spiked": spiked, "flat": flat, "wide": wide, "huge": huge}


def softmax_fields(soft: Softmax) -> tuple:
    return soft.d.tobytes(), soft.e.tobytes(), soft.z, soft.log_z, soft.entropy


@pytest.mark.parametrize("n", VOCABS)
def test_a_softmax_given_the_extremes_is_the_one_that_finds_them(n):
    for name, x in adversarial_logits(np.random.default_rng(n), n).items():
        values = x.astype(np.float64)
        given = Softmax(values, (float(x.max()), float(x.min())))
        assert softmax_fields(given) == softmax_fields(Softmax(values)), name


@pytest.mark.parametrize("n", VOCABS)
def test_the_sum_ahead_of_every_token_is_the_two_masked_sums(n):
    rng = np.random.default_rng(n + 1)
    for name, x in adversarial_logits(rng, n).items():
        soft = Softmax(x.astype(np.float64))
        e = soft.e
        positions = np.unique(np.concatenate([soft.head[:32], rng.integers(0, n, 8), np.argsort(-e, kind="stable")[:8]]))
        for pos in positions.tolist():
            own = e[pos]
            expected = float(np.sum(e, where=e > own)) + float(np.sum(e[:pos], where=e[:pos] == own))
            assert soft.ahead(pos) == expected, (name, pos)


def test_sum_at_is_numpys_masked_sum_bit_for_bit():
    rng = np.random.default_rng(3)
    for trial in range(100):
        n = int(rng.integers(1, 100_000))
        e = rng.random(n) ** rng.uniform(1.0, 40.0)
        mask = rng.random(n) < rng.choice([0.0005, 0.01, 0.3, 0.95])
        if trial % 4 == 0:  # long runs of consecutive positions too
            start = int(rng.integers(0, n))
            mask[start : start + int(rng.integers(1, 20_000))] = True
        assert sum_at(e, np.flatnonzero(mask)) == float(np.sum(e, where=mask)), trial
    assert sum_at(np.ones(3), np.array([], dtype=np.int64)) == 0.0


@pytest.mark.parametrize("n", VOCABS)
@pytest.mark.parametrize("strict", [True, False])
def test_a_prefix_from_the_softmaxs_head_is_the_one_from_its_own_passes(n, strict):
    rng = np.random.default_rng(n + 2)
    for name, x in adversarial_logits(rng, n).items():
        soft = Softmax(x.astype(np.float64))
        for u in (0.0, 0.9, 0.999999, float(rng.random())):
            for last_only in (True, False):
                plain = prob_prefix(soft.e, u * soft.z, strict, last_only)
                fused = prob_prefix(soft.e, u * soft.z, strict, last_only, soft=soft)
                assert (plain is None and fused is None) or np.array_equal(plain, fused), (name, u)


@pytest.mark.parametrize("n", (4097, 262_144))
@pytest.mark.parametrize("params", [SamplingParams(), SamplingParams(temperature=0.7, top_p=0.9), SamplingParams(top_p=0.5)])
def test_a_traced_step_is_the_same_when_the_softmax_finds_the_extremes_itself(n, params, monkeypatch):
    rng = np.random.default_rng(n + 4)
    cases = adversarial_logits(rng, n)
    cases["ruled_out"] = cases["spiked"].copy()
    cases["ruled_out"][rng.integers(0, n, 3)] = -np.inf  # tokens the model rules out

    def steps() -> list[dict]:
        return [
            SamplerChain(params).step(x, [1, 2], np.random.default_rng(5), top_n=20, watch=[0, n - 1]).to_dict()
            for x in cases.values()
        ]

    fused = steps()
    full_passes = Softmax.__init__
    monkeypatch.setattr(Softmax, "__init__", lambda self, logits, extremes=None: full_passes(self, logits))
    assert steps() == fused


def test_candidates_with_extremes_hand_them_to_the_softmax_only():
    values = np.array([1.0, -2.0, 3.0])
    cand = Candidates(np.arange(3), values, 3, extremes=(3.0, -2.0))
    assert softmax_fields(cand.softmax) == softmax_fields(Softmax(values))
    shifted = cand.shifted(np.array([2]), np.array([-9.0]))  # new values: extremes unknown again
    assert softmax_fields(shifted.softmax) == softmax_fields(Softmax(np.array([1.0, -2.0, -9.0])))
