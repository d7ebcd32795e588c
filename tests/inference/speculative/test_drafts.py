"""Prompt lookup: tables of contexts and the drafts they give, worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from inference.speculative import PromptLookup, lookup


@pytest.mark.parametrize(
    ("context", "k", "expected"),
    [
        ([1, 2, 3, 4, 1, 2], 3, (3, 4, 1)),  # the tail [1, 2] (with [4, 1, 2] absent) was followed by 3, 4, 1
        ([1, 2, 3, 4, 1, 2], 1, (3,)),  # k caps the draft
        ([1, 2, 3], 2, ()),  # no earlier occurrence of any tail
        ([], 4, ()),
        ([7], 4, ()),  # one token: nothing before it to match
        ([5, 5, 5], 4, (5,)),  # [5, 5] at 0 was followed by one token: the continuation stops at the end
        ([1, 2, 3, 9, 2, 3, 7, 2, 3], 2, (7, 2)),  # the latest occurrence of [2, 3] wins
        ([4, 2, 3, 8, 9, 2, 3, 6, 1, 2, 3], 1, (6,)),  # [1, 2, 3] nowhere before; the latest [2, 3] precedes 6
    ],
)
def test_lookup_drafts_what_followed_the_tail(context, k, expected):
    assert lookup(context, k) == expected


def test_the_longest_tail_is_tried_first():
    # [1, 2] last occurred at 4 (followed by 9); [0, 1, 2] occurred at 0 (followed by 3): the longer match wins.
    context = [0, 1, 2, 3, 1, 2, 9, 0, 1, 2]
    assert lookup(context, 2) == (3, 1)
    assert lookup(context, 2, max_ngram=2) == (9, 0)


def test_min_ngram_refuses_short_matches():
    context = [1, 2, 3, 4, 5, 3]
    assert lookup(context, 2) == (4, 5)
    assert lookup(context, 2, min_ngram=2) == ()


def test_prompt_lookup_proposes_point_masses():
    draft = PromptLookup().propose([1, 2, 3, 1, 2], 4)
    assert draft.tokens == (3, 1, 2) and draft.q is None
    q = draft.q_of(1, vocab_size=5)
    assert q.tolist() == [0.0, 1.0, 0.0, 0.0, 0.0] and q.dtype == np.float64


def test_prompt_lookup_checks_its_window():
    with pytest.raises(ValueError):
        PromptLookup(max_ngram=2, min_ngram=3)
