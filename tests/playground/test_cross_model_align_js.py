"""Two models' token streams aligned on text offsets (static/shared/js/cross-model-align.js), run in
Node on hand-made streams: one token against three, byte pieces of an emoji against one token,
texts that part and streams that end apart; and the rating of one model's continuation read off
another model's ``score`` answer."""

from __future__ import annotations

import math

import pytest

from tests.js import module_url, run_js

SCRIPT = f"""
const m = await import("{module_url("shared/js/cross-model-align.js")}");
const out = INPUT.map(([a, b]) => {{
  const spans = m.alignStreams(a, b);
  const offset = m.firstDifference(a.join(""), b.join(""));
  return {{ spans, offset, divergent: m.divergentSpan(spans, offset) }};
}});
console.log(JSON.stringify(out));
"""


def rows(result):
    """Each span as (start, end, A's token indices, B's, A's text, B's text, same)."""
    return [(s["start"], s["end"], s["a"], s["b"], s["textA"], s["textB"], s["same"]) for s in result["spans"]]


CASES = {
    "one vs three": ([" Paris"], [" P", "ar", "is"]),
    "regrouped": ([" the", " cap", "ital", ","], [" the", " capital", ","]),
    "emoji bytes": (["I", " ", "", "", "", "😀", "!"], ["I", " 😀", "!"]),
    "part ways": ([" Paris", ".", ""], [" Paris", ",", " the"]),
    "inside a token": (["ab"], ["a", "bc"]),
    "one stops": ([" Paris", ""], [" Paris", " is"]),
    "equal": (["a", "b"], ["a", "b"]),
    "both empty": ([""], []),
}


@pytest.fixture(scope="module")
def aligned():
    return dict(zip(CASES, run_js(SCRIPT, list(CASES.values())), strict=True))


def test_one_token_against_three(aligned):
    assert rows(aligned["one vs three"]) == [(0, 6, [0], [0, 1, 2], " Paris", " Paris", True)]
    assert aligned["one vs three"]["offset"] is None
    assert aligned["one vs three"]["divergent"] is None


def test_spans_end_where_both_streams_have_a_boundary(aligned):
    assert rows(aligned["regrouped"]) == [
        (0, 4, [0], [0], " the", " the", True),
        (4, 12, [1, 2], [1], " capital", " capital", True),
        (12, 13, [3], [2], ",", ",", True),
    ]


def test_byte_pieces_of_an_emoji_go_with_the_token_that_completes_it(aligned):
    # the emoji is 2 UTF-16 units; its three partial byte tokens have empty pieces at its offset
    assert rows(aligned["emoji bytes"]) == [
        (0, 1, [0], [0], "I", "I", True),
        (1, 4, [1, 2, 3, 4, 5], [1], " 😀", " 😀", True),
        (4, 5, [6], [2], "!", "!", True),
    ]


def test_texts_that_part_mark_the_first_difference_and_each_differing_span(aligned):
    result = aligned["part ways"]
    assert result["offset"] == 6
    assert rows(result) == [
        (0, 6, [0], [0], " Paris", " Paris", True),
        (6, 7, [1], [1], ".", ",", False),
        (7, 11, [2], [2], "", " the", False),  # A's end-of-sequence token where B went on
    ]
    assert result["divergent"] == 1


def test_a_shorter_text_ending_inside_a_token_keeps_that_token_whole(aligned):
    result = aligned["inside a token"]
    assert rows(result) == [(0, 3, [0], [0, 1], "ab", "abc", False)]
    assert (result["offset"], result["divergent"]) == (2, 0)


def test_a_stream_that_stopped_differs_where_the_other_goes_on(aligned):
    result = aligned["one stops"]
    assert rows(result) == [(0, 6, [0], [0], " Paris", " Paris", True), (6, 9, [1], [1], "", " is", False)]
    assert (result["offset"], result["divergent"]) == (6, 1)


def test_equal_and_empty_streams(aligned):
    assert rows(aligned["equal"]) == [(0, 1, [0], [0], "a", "a", True), (1, 2, [1], [1], "b", "b", True)]
    assert rows(aligned["both empty"]) == [(0, 0, [0], [], "", "", True)]


RATING = f"""
const m = await import("{module_url("shared/js/cross-model-align.js")}");
const out = INPUT.map(({{ context, scored, rater, author, text }}) => {{
  const rating = m.continuationRating(context, scored);
  return {{ rating, words: m.ratingText(rater, author, text, rating) }};
}});
console.log(JSON.stringify(out));
"""

PROMPT = [
    {"id": 2, "token": "<bos>", "logprob": None, "top": []},
    {"id": 818, "token": "The", "logprob": -9.0, "top": []},
]


def score_row(token_id, text, logprob, top):
    return {"id": token_id, "token": text, "logprob": logprob, "top": [{"id": i, "token": t, "logprob": lp} for i, t, lp in top]}


@pytest.fixture(scope="module")
def ratings():
    cases = [
        # one token of the rater's, second in its list
        {
            "context": [2, 818],
            "scored": [
                *PROMPT,
                score_row(9079, " Paris", math.log(0.31), [(496, " the", math.log(0.4)), (9079, " Paris", math.log(0.31))]),
            ],
        },
        # two tokens of the rater's: the probabilities multiply; the first is not listed
        {
            "context": [2, 818],
            "scored": [
                *PROMPT,
                score_row(7, " Par", math.log(0.1), [(496, " the", -0.5)]),
                score_row(8, "is", math.log(0.5), []),
            ],
        },
        # the rater's tokenizer merged the seam: no probability of the continuation alone
        {"context": [2, 818], "scored": [PROMPT[0], score_row(999, "The Paris", -3.0, [])]},
    ]
    for case in cases:
        case.update(rater="Gemma", author="SmolLM", text=" Paris")
    return run_js(RATING, cases)


def test_one_token_continuation(ratings):
    rating = ratings[0]["rating"]
    assert rating["p"] == pytest.approx(0.31)
    assert (rating["rank"], rating["listed"], rating["tokens"], rating["seam"]) == (2, 2, [" Paris"], False)
    assert ratings[0]["words"] == 'Gemma gave SmolLM\'s " Paris" p = 0.31 (rank 2).'


def test_several_tokens_multiply_and_an_unlisted_first_token_has_no_rank(ratings):
    rating = ratings[1]["rating"]
    assert rating["p"] == pytest.approx(0.05)
    assert (rating["rank"], rating["listed"], rating["tokens"]) == (None, 1, [" Par", "is"])
    assert (
        ratings[1]["words"]
        == 'Gemma gave SmolLM\'s " Paris" p = 0.050 as 2 of its tokens, " Par" "is" (the first: not in its top 1).'
    )


def test_a_seam_crossing_token_gives_no_probability(ratings):
    assert ratings[2]["rating"]["seam"] is True
    assert ratings[2]["rating"]["p"] is None
    assert "no probability of its own" in ratings[2]["words"]
