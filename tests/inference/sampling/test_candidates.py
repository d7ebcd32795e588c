"""Candidate sets moved by a few tokens at a time (``Candidates.shifted``) give the logits of the
same edits made on a copy, leave their input untouched, and build their array only when read."""

from __future__ import annotations

import numpy as np
import pytest

from inference.sampling.candidates import LOGIT_LIMIT, Candidates

V = 1000


@pytest.fixture
def raw() -> Candidates:
    return Candidates(np.arange(V), np.random.default_rng(0).normal(0, 3, V), V)


def test_a_run_of_shifts_equals_the_same_edits_on_a_copy_and_leaves_each_input_as_it_was(raw):
    rng = np.random.default_rng(1)
    before = raw.logits.copy()
    expected = raw.logits.copy()
    sets = [raw]
    for _ in range(5):  # overlapping positions: a later edit wins
        pos = rng.choice(V, size=40, replace=False)
        values = sets[-1].logits_at(pos) * 0.5 - 1.0
        expected[pos] = values
        sets.append(sets[-1].shifted(pos, values))
    probe = np.arange(V)
    assert all(s._logits is None for s in sets[1:])  # nothing copied yet
    np.testing.assert_array_equal(sets[-1].logits_at(probe), expected)  # read through the edits
    assert sets[-1]._logits is None  # still nothing built
    np.testing.assert_array_equal(sets[-1].logits, expected)
    np.testing.assert_array_equal(raw.logits, before)
    assert not sets[-1].logits.flags.writeable
    middle = sets[2]  # built on its own, later: its own two edits only
    once = before.copy()
    for s in sets[1:3]:
        once[s._edits[-1][0]] = s._edits[-1][1]
    np.testing.assert_array_equal(middle.logits, once)


def test_shifted_values_are_clipped_and_the_softmax_sees_them(raw):
    out = raw.shifted(np.array([3, 7]), np.array([np.inf, -np.inf]))
    assert out.logits_at(np.array([3, 7])).tolist() == [LOGIT_LIMIT, -LOGIT_LIMIT]
    assert out.softmax.p[3] == 1.0 and out.softmax.p[7] == 0.0


def test_a_removal_after_shifts_keeps_the_shifted_values(raw):
    out = raw.shifted(np.array([1, 2]), np.array([50.0, -50.0]))
    mask = np.ones(V, dtype=bool)
    mask[2] = False
    kept = out.keep(mask)
    assert len(kept) == V - 1 and kept.logits_at(np.array([1]))[0] == 50.0
    assert kept.ids[1] == 1 and 2 not in kept.ids


def test_a_shift_of_no_tokens_is_the_same_set(raw):
    assert raw.shifted(np.array([], dtype=np.int64), np.array([])) is raw
    once = raw.shifted(np.array([5]), np.array([9.0]))
    assert once.shifted(np.array([], dtype=np.int64), np.array([])) is once
    assert once.logits_at(np.array([5, 6])).tolist() == [9.0, raw.logits[6]]
