"""The watched-token chart's pure parts (static/playground/js/watch-facts.js, run in Node): the
series read from token events, one step's numbers in words, the sentence that says why a token
was never chosen, and the lines' points, on runs worked out by hand."""

from __future__ import annotations

from tests.js import module_url, run_js
from tests.playground.token_fixtures import token_event

FACTS = f"""
const facts = await import("{module_url("playground/js/watch-facts.js")}");
const series = facts.watchSeries(INPUT.tokens);
console.log(JSON.stringify({{
  series,
  steps: series.map((s) => INPUT.tokens.map((_, i) => facts.stepText(s, i))),
  why: series.map((s) => facts.whyText(s)),
  lines: series.map((s) => facts.linePoints(s, "raw", (i) => 10 * i, (p) => 100 * (1 - p))),
}}));
"""


def watched(token_id, text, raw, prob, raw_rank, rank, removed_by):
    return {
        "id": token_id,
        "token": text,
        "raw_prob": raw,
        "prob": prob,
        "raw_rank": raw_rank,
        "rank": rank,
        "removed_by": removed_by,
    }


def lyon(raw, raw_rank, removed_by="top_p"):
    return watched(31, " Lyon", raw, 0.0, raw_rank, None, removed_by)


def paris(raw, prob, rank):
    return watched(7, " Paris", raw, prob, 2, rank, None)


TOKENS = [  # whole token events, checked against the event's schema (the third: no ``watched``, as saved before it)
    token_event(index=0, id=5, watched=[lyon(0.001, 57), paris(0.3, 0.4, 2)]),
    token_event(index=1, id=7, watched=[lyon(0.002, 31), paris(0.5, 0.625, 1)]),
    {k: v for k, v in token_event(index=2, id=9).items() if k != "watched"},
    token_event(index=3, id=5, watched=[lyon(0.004, 25, "top_k"), paris(0.2, 0.0, None) | {"removed_by": "min_p"}]),
]


def test_series_words_and_lines_from_hand_worked_events():
    out = run_js(FACTS, {"tokens": TOKENS})
    lyon_series, paris_series = out["series"]
    assert [lyon_series["id"], paris_series["id"]] == [31, 7]
    assert lyon_series["steps"][2] is None
    assert paris_series["steps"][1] == {"raw": 0.5, "final": 0.625, "rawRank": 2, "rank": 1, "removedBy": None, "chosen": True}
    assert out["steps"][0][0] == '" Lyon" raw 0.10% (rank 57) → final 0% (removed by top_p)'
    assert out["steps"][1][1] == '" Paris" raw 50.00% (rank 2) → final 62.50% (rank 1, chosen)'
    assert out["steps"][0][2] == '" Lyon": not watched at this step'
    assert out["why"][0] == (
        '" Lyon" was never chosen: removed by top_p at 2 of 3 steps, by top_k at 1 of 3 steps; '
        "never in the top 20 (best rank 25)."
    )
    assert out["why"][1] == (
        '" Paris" was chosen at 1 of 3 steps: removed by min_p at 1 of 3 steps; '
        "kept but not drawn at 1 of 3 steps (at most 40.00%); best rank 2 before sampling."
    )
    assert out["lines"][0] == ["0,99.9 10,99.8", "30,99.6"]  # the unwatched step breaks the line


def test_a_token_the_model_rules_out_and_a_run_that_watched_nothing():
    tokens = [{"id": 1, "watched": [watched(3, "x", 0.0, 0.0, None, None, None)]}]
    out = run_js(FACTS, {"tokens": tokens})
    assert out["why"] == ['"x" was never chosen: ruled out by the model itself at 1 of 1 step.']
    assert out["steps"][0][0] == '"x" raw 0% (ruled out by the model) → final 0% (no chance)'
    assert run_js(FACTS, {"tokens": [{"id": 1}, {"id": 2, "watched": []}]})["series"] == []
