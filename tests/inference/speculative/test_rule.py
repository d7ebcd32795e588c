"""The acceptance rule on a four-token vocabulary: tables worked out by hand, and exactness
checked by quadrature (a fine grid of the two uniform draws stands in for the integral)."""

from __future__ import annotations

import numpy as np
import pytest

from inference.sampling.candidates import Candidates
from inference.speculative import judge, residual_pick

from ..sampling.helpers import ScriptedRng

P = np.array([0.1, 0.2, 0.3, 0.4])


def candidates(p: np.ndarray) -> Candidates:
    """The candidate set whose softmax is ``p`` (tokens with p = 0 removed)."""
    keep = np.flatnonzero(p > 0)
    return Candidates(keep.astype(np.int64), np.log(p[keep]), len(p))


def point(token: int, size: int = 4) -> np.ndarray:
    q = np.zeros(size)
    q[token] = 1.0
    return q


@pytest.mark.parametrize(
    ("draft", "u", "accepted"),
    [
        (3, 0.39, True),  # u < p(3) = 0.4
        (3, 0.41, False),
        (0, 0.09, True),
        (0, 0.11, False),
    ],
)
def test_a_point_mass_draft_is_accepted_with_probability_p(draft, u, accepted):
    rng = ScriptedRng(u, 0.0)
    check = judge(candidates(P), draft, point(draft), rng, greedy=False)
    assert check.accepted is accepted
    assert (check.p, check.q, check.draw) == pytest.approx((P[draft], 1.0, u))
    assert rng.calls == (1 if accepted else 2)  # a rejection draws once more, for the correction
    if accepted:
        assert check.token == draft
    else:
        assert check.token != draft


def test_a_rejected_point_mass_is_corrected_from_p_without_it():
    # p without token 1: [0.1, 0, 0.3, 0.4] / 0.8 → cumulative 0.125, 0.125, 0.5, 1.0
    for u2, expected in ((0.0, 0), (0.124, 0), (0.126, 2), (0.49, 2), (0.51, 3), (0.999, 3)):
        check = judge(candidates(P), 1, point(1), ScriptedRng(0.9, u2), greedy=False)
        assert (check.accepted, check.token) == (False, expected)


def test_greedy_accepts_exactly_the_chains_pick_and_draws_nothing():
    final = candidates(P).keep_positions(np.array([3]))  # greedy's final set: one token
    for draft, accepted in ((3, True), (2, False)):
        rng = ScriptedRng()
        check = judge(final, draft, point(draft), rng, greedy=True)
        assert (check.accepted, check.token, check.draw, rng.calls) == (accepted, 3, None, 0)


def test_residual_pick_reads_max_of_p_minus_q_normalised():
    q = np.array([0.4, 0.1, 0.3, 0.2])  # p - q: [-0.3, 0.1, 0, 0.2] → residual [0, 1/3, 0, 2/3]
    assert [residual_pick(P, q, u) for u in (0.0, 0.33, 0.34, 0.99)] == [1, 1, 3, 3]
    with pytest.raises(ValueError):
        residual_pick(P, P, 0.5)


@pytest.mark.parametrize(
    "q",
    [
        np.array([0.7, 0.1, 0.1, 0.1]),
        np.array([0.1, 0.2, 0.3, 0.4]),  # q = p: every draft is accepted
        np.array([0.0, 0.0, 0.5, 0.5]),
        np.array([0.25, 0.25, 0.25, 0.25]),
    ],
)
def test_the_output_is_distributed_as_p_whatever_q_is(q):
    """Sum over the drafts d ~ q and a fine grid of the draws: P(token) must be p."""
    grid = (np.arange(400) + 0.5) / 400  # midpoints: the quadrature of a uniform draw
    p_final = np.zeros(4)
    final = candidates(P)
    for draft in np.flatnonzero(q > 0):
        outcomes = np.zeros(4)
        for u in grid:
            check = judge(final, int(draft), q, ScriptedRng(u, *grid), greedy=False)
            if check.accepted:
                outcomes[check.token] += 1.0
            else:  # the correction's own draw, integrated over its grid
                outcomes += np.bincount([residual_pick(P, q, v) for v in grid], minlength=4) / len(grid)
        p_final += q[draft] * outcomes / len(grid)
    assert p_final == pytest.approx(P, abs=3e-3)
