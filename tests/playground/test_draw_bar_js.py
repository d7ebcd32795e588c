"""The draw bar's layout (static/shared/js/draw-bar.js), run in Node: the chosen token sits at
the server's ``draw_interval`` wherever it ranks, the unlisted mass is drawn as "other tokens",
and the label says where u fell only when that is true."""

from __future__ import annotations

import pytest

from tests.js import module_url, run_js
from tests.playground.token_fixtures import token_event

SCRIPT = f"""
const {{ cumulativeSegments, drawLabel, showsDraw }} = await import("{module_url("shared/js/draw-bar.js")}");
const out = INPUT.map((token) => {{
  const segments = cumulativeSegments(token);
  return {{ segments, shown: showsDraw(token), label: showsDraw(token) ? drawLabel(token, segments) : null }};
}});
console.log(JSON.stringify(out));
"""

# Five listed alternatives (the top N by raw probability) of a flat step at T 1.5, as in the issue:
# together 0.6128 of the final mass; the token picked with u = 0.7138 is not among them.
LISTED = [
    {"id": 10, "token": " the", "raw_prob": 0.3, "prob": 0.2, "removed_by": None},
    {"id": 11, "token": " a", "raw_prob": 0.2, "prob": 0.15, "removed_by": None},
    {"id": 12, "token": " its", "raw_prob": 0.15, "prob": 0.12, "removed_by": None},
    {"id": 13, "token": " one", "raw_prob": 0.1, "prob": 0.1029, "removed_by": None},
    {"id": 14, "token": " sapp", "raw_prob": 0.05, "prob": 0.0399, "removed_by": None},
]


def token(token_id, text, prob, draw, interval, alternatives=LISTED, origin=None):
    forced = origin in ("typed", "branch", "kept")
    return token_event(
        id=token_id,
        token=text,
        text=text,
        raw_prob=prob,
        prob=prob,
        draw=draw,
        draw_interval=interval,
        alternatives=alternatives,
        forced=forced,
        origin=origin or ("greedy" if draw is None else "sampled"),
    )


def spans(result):
    return [(s["token"], pytest.approx(s["start"]), pytest.approx(s["end"]), s["chosen"]) for s in result["segments"]]


@pytest.fixture(scope="module")
def bars():
    return run_js(
        SCRIPT,
        [
            token(500, " Saturday", 0.0021, 0.7138, [0.7125, 0.7146]),  # far outside the top 5
            token(12, " its", 0.12, 0.41, [0.35, 0.47]),  # listed: right after those ahead of it
            token(500, " Saturday", 0.0021, 0.7138, None),  # a run saved before draw_interval
            token(14, " sapp", 0.0399, 0.1, [0.5729, 0.6128], origin="branch"),  # forced: u is elsewhere
            token(600, " removed", 0.0, 0.1, None, origin="kept"),  # forced, removed by a stage
            token(10, " the", 0.2, None, [0.0, 0.2]),  # greedy: no draw, no label
        ],
    )


def test_a_token_outside_the_listed_ones_sits_at_its_real_place_after_the_other_tokens(bars):
    outside = bars[0]
    assert spans(outside) == [
        (" the", 0.0, 0.2, False),
        (" a", 0.2, 0.35, False),
        (" its", 0.35, 0.47, False),
        (" one", 0.47, 0.5729, False),
        (" sapp", 0.5729, 0.6128, False),
        (None, 0.6128, 0.7125, False),  # the unlisted tokens ahead of it
        (" Saturday", 0.7125, 0.7146, True),
        (None, 0.7146, 1.0, False),
    ]
    chosen = next(s for s in outside["segments"] if s["chosen"])
    assert chosen["start"] <= 0.7138 < chosen["end"]
    assert outside["label"] == (
        'Cumulative bar of the final probabilities; the draw u = 0.7138 fell in " Saturday"\'s segment, from 0.7125 to 0.7146'
    )


def test_a_listed_token_is_followed_by_the_listed_ones_after_it(bars):
    assert spans(bars[1]) == [
        (" the", 0.0, 0.2, False),
        (" a", 0.2, 0.35, False),
        (" its", 0.35, 0.47, True),
        (" one", 0.47, 0.5729, False),
        (" sapp", 0.5729, 0.6128, False),
        (None, 0.6128, 1.0, False),
    ]
    assert 'fell in " its"\'s segment, from 0.3500 to 0.4700' in bars[1]["label"]


def test_without_the_interval_an_unlisted_token_gets_no_made_up_segment(bars):
    old = bars[2]
    assert [s["chosen"] for s in old["segments"]] == [False] * 6
    assert spans(old)[-1] == (None, 0.6128, 1.0, False)
    assert 'fell among the other tokens, where " Saturday" lies' in old["label"]
    assert "'s segment" not in old["label"]


def test_a_token_no_draw_picked_gets_no_bar_and_no_u(bars):
    forced, removed = bars[3], bars[4]
    assert (" sapp", 0.5729, 0.6128, True) in spans(forced)  # its place is known, but u did not pick it
    assert not forced["shown"] and forced["label"] is None
    assert not any(s["chosen"] for s in removed["segments"]) and not removed["shown"]
    assert [bar["shown"] for bar in bars] == [True, True, True, False, False, False]


@pytest.mark.parametrize("origin", ["typed", "branch", "kept", "forced_by_grammar", "draft", "corrected", "greedy"])
def test_no_origin_but_sampled_shows_u_on_the_bar(origin):
    (bar,) = run_js(SCRIPT, [token(12, " its", 0.12, 0.41, [0.35, 0.47], origin=origin)])
    assert not bar["shown"]
    (sampled,) = run_js(SCRIPT, [token(12, " its", 0.12, 0.41, [0.35, 0.47], origin="sampled")])
    assert sampled["shown"] and "u = 0.4100 fell in" in sampled["label"]


def test_segments_tile_the_bar_from_0_to_1(bars):
    for bar in bars:
        segments = bar["segments"]
        assert segments[0]["start"] == 0 and segments[-1]["end"] == pytest.approx(1.0)
        for before, after in zip(segments, segments[1:]):
            assert after["start"] == pytest.approx(before["end"])
    assert bars[5]["label"] is None and spans(bars[5])[0] == (" the", 0.0, 0.2, True)


def test_a_speculative_correction_is_sampled_but_its_u_is_the_acceptance_tests_and_gets_no_bar():
    # u = 0.66 rejected the draft; the token was drawn from max(0, p - q): its segment does not hold u
    (bar,) = run_js(SCRIPT, [token(12, " its", 0.12, 0.66, [0.35, 0.47], origin="corrected") | {"drafted": False}])
    assert not bar["shown"] and bar["label"] is None
