"""The guided walk's text (static/playground/js/walk-steps.js, run in Node): each step of the loop
told with one token event's own numbers, on events worked out by hand (sampled, greedy, forced)."""

from __future__ import annotations

import pytest

from tests.js import module_url, run_js
from tests.playground.token_fixtures import token_event

WALK = f"""
const {{ walkSteps }} = await import("{module_url("playground/js/walk-steps.js")}");
console.log(JSON.stringify(INPUT.map(([token, params]) => walkSteps(token, params))));
"""

SAMPLED = token_event(
    **{
        "index": 2,
        "id": 31,
        "token": " Lyon",
        "raw_prob": 0.25,
        "prob": 0.5,
        "draw": 0.6,
        "draw_interval": [0.5, 1.0],
        "forced": False,
        "alternatives": [
            {"id": 7, "token": " Paris", "raw_prob": 0.5, "prob": 0.5, "removed_by": None},
            {"id": 31, "token": " Lyon", "raw_prob": 0.25, "prob": 0.5, "removed_by": None},
        ],
        "stages": [{"name": "temperature", "kept": 100}, {"name": "top_k", "kept": 2}],
        "entropy": {"before": 1.04, "after": 0.69},
    }
)


def test_a_sampled_step_in_words():
    (steps,) = run_js(WALK, [[SAMPLED, {"temperature": 0.5}]])
    assert [s["key"] for s in steps] == ["logits", "softmax", "temperature", "truncation", "draw", "append"]
    assert [s["target"] for s in steps] == ["prompt", "alternatives", "temperature", "stages", "draw", "token"]
    text = [s["text"] for s in steps]
    assert "the 2 tokens generated before position 3" in text[0] and "ln p = -1.3863" in text[0]  # ln 0.25
    assert '" Lyon" gets 25.00% from the model alone; the most likely token, " Paris", 50.00%.' in text[1]
    assert "T = 0.5" in text[2] and "sharpens" in text[2] and "1.04 nats" in text[2] and "0.69 nats" in text[2]
    assert "top_k kept 2 tokens." in text[3] and "temperature kept" not in text[3] and "ends with 50.00%" in text[3]
    assert "u = 0.6000" in text[4] and "[0.5000, 1.0000)" in text[4]
    assert text[5] == '" Lyon" is appended as token 3 of the output, and the loop starts again with it as part of the input.'


def test_greedy_forced_and_no_truncation():
    greedy = token_event(
        **SAMPLED | {"draw": None, "stages": [{"name": "temperature", "kept": 1}], "index": 0, "origin": "greedy"}
    )
    forced = token_event(**SAMPLED | {"forced": True, "origin": "branch"})
    unchanged = SAMPLED | {"stages": []}
    walks = run_js(WALK, [[greedy, {"temperature": 0}], [forced, {"temperature": 1.5}], [unchanged, {}]])
    assert "Temperature 0 is greedy" in walks[0][2]["text"] and walks[0][4]["text"].startswith("Greedy: nothing is drawn")
    assert "the 0 tokens generated before position 1" in walks[0][0]["text"]
    assert "flattens" in walks[1][2]["text"] and "you picked it as a branch" in walks[1][4]["text"]
    assert walks[2][2]["text"].startswith("Temperature 1 leaves the logits")  # the default when params omit it
    assert walks[2][3]["text"].startswith("No other stage is on")


@pytest.mark.parametrize(
    ("origin", "said"),
    [
        ("typed", 'No draw chose " Lyon": you typed it'),
        ("branch", 'No draw chose " Lyon": you picked it as a branch'),
        ("kept", 'No draw chose " Lyon": it is kept from the run this one continues'),
        ("forced_by_grammar", 'The grammar allowed only " Lyon" here'),
        ("draft", '" Lyon" was drafted ahead and the model accepted it: its acceptance draw u = 0.6000'),
    ],
)
def test_the_draw_step_tells_how_a_token_not_drawn_got_there(origin, said):
    event = token_event(**SAMPLED | {"origin": origin, "forced": origin in ("typed", "branch", "kept")})
    (steps,) = run_js(WALK, [[event, {"temperature": 0.5}]])
    draw = steps[4]["text"]
    assert draw.startswith(said)
    assert "falls in it" not in draw and "[0.5000, 1.0000)" not in draw  # nothing says u picked it


def test_a_speculative_correction_is_not_said_to_be_picked_by_its_u():
    corrected = token_event(**SAMPLED | {"draw": 0.2, "drafted": False, "origin": "corrected"})
    (steps,) = run_js(WALK, [[corrected, {"temperature": 0.5}]])
    assert steps[4]["text"].startswith("A speculative step: the acceptance draw u = 0.2000 rejected")
    assert "falls in it" not in steps[4]["text"]
    inside = token_event(**SAMPLED | {"draw": 0.7, "drafted": False, "origin": "corrected"})  # u in [0.5, 1.0) by chance
    (steps,) = run_js(WALK, [[inside, {"temperature": 0.5}]])
    assert "falls in it" not in steps[4]["text"] and "rejected" in steps[4]["text"]
