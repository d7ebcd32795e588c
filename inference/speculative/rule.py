"""The acceptance rule of speculative sampling (Leviathan et al. 2023; Chen et al. 2023), one
drafted token at a time, on the distribution p the sampler chain would draw from at that position.

A token d drafted from q is accepted with probability min(1, p(d) / q(d)); when it is rejected the
token is drawn from the residual max(0, p − q), normalised. Whatever q is, the token that comes out
is distributed exactly as p: P(d) = q(d)·min(1, p/q) + (1 − Σ min(p, q))·(p − q)⁺(d) / Σ(p − q)⁺ = p(d).
For a point mass q (prompt lookup) this is: accept with probability p(d); on rejection draw from p
without d. Greedy decoding's p is a point mass on the chain's pick, so d is accepted exactly when
it is that pick, and the rule draws nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from inference.sampling.candidates import Candidates


@dataclass(frozen=True)
class Check:
    """One drafted token judged: ``p`` and ``q`` its probabilities under the target's chain and the
    draft, ``draw`` the uniform number compared with p/q (None when greedy), and ``token`` what
    the position gets: the draft when accepted, else the corrected token drawn from the residual."""

    draft: int
    accepted: bool
    p: float
    q: float
    draw: float | None
    token: int


def judge(final: Candidates, draft: int, q: np.ndarray, rng: np.random.Generator, greedy: bool) -> Check:
    """Accepts or corrects ``draft`` given the chain's final candidates and the draft's q [V]."""
    p = final.to_full(final.softmax.p, 0.0)  # [V] float64, removed tokens exactly 0
    p_draft, q_draft = float(p[draft]), float(q[draft])
    if greedy:  # p is a point mass on the chain's pick
        choice = int(final.ids[0])
        return Check(draft, draft == choice, float(draft == choice), q_draft, None, choice)
    draw = float(rng.random())
    if draw * q_draft < p_draft:  # u < p/q without dividing (q(d) > 0: d was drafted from q)
        return Check(draft, True, p_draft, q_draft, draw, draft)
    return Check(draft, False, p_draft, q_draft, draw, residual_pick(p, q, float(rng.random())))


def residual_pick(p: np.ndarray, q: np.ndarray, u: float) -> int:
    """Inverse CDF over max(0, p − q) normalised, in token id order: the first token whose
    cumulative mass exceeds u times the total (the last one with mass if rounding falls short)."""
    residual = np.maximum(p - q, 0.0)  # [V]
    cumulative = np.cumsum(residual)
    total = float(cumulative[-1])
    if total <= 0.0:
        raise ValueError("the residual max(0, p - q) is empty: p equals q, so no draft can be rejected")
    index = int(np.searchsorted(cumulative, u * total, side="right"))
    if index >= len(p):
        index = int(np.flatnonzero(residual)[-1])
    return index
