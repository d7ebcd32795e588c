"""What must be in view, and whole, on a 1280×800 screen and a 390×844 phone (issue 30, item 11):
the "Switch to chat" suggestion in view without scrolling when an instruction is typed (it sat
below the fold, under the model's facts); "Score this text" on one line (it wrapped on three); the
draw bar's "u = …" label beside its marker, not under the marker's head."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage

pytestmark = pytest.mark.e2e

SCREENS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def in_view(box: dict, screen: dict) -> bool:
    return (
        box["y"] >= 0
        and box["y"] + box["height"] <= screen["height"]
        and box["x"] >= 0
        and box["x"] + box["width"] <= screen["width"]
    )


@pytest.mark.parametrize("screen", SCREENS, ids=list(SCREENS))
def test_the_switch_to_chat_suggestion_shows_where_the_instruction_is_typed(playground: PlaygroundPage, screen):
    page = playground.page
    size = SCREENS[screen]
    page.set_viewport_size(size)
    prompt = page.get_by_label("Prompt", exact=True)
    prompt.fill("Write a haiku about the sea.")  # fill scrolls the prompt into view, as typing does
    button = page.get_by_role("button", name="Switch to chat")
    expect(button).to_be_visible()
    scroll = page.evaluate("window.scrollY")
    if screen == "desktop":
        assert scroll == 0, "the page scrolled to show the prompt"
    # no scrolling beyond what typing in the prompt did: the suggestion and its button are on screen
    assert in_view(button.bounding_box(), size), (button.bounding_box(), scroll)
    assert in_view(page.locator("[data-mode-suggestion]").bounding_box(), size)
    assert page.evaluate("window.scrollY") == scroll
    playground.shot(f"switch-to-chat-{screen}")
    button.click()
    expect(page.get_by_label("Chat")).to_be_checked()


@pytest.mark.parametrize("screen", SCREENS, ids=list(SCREENS))
def test_the_run_buttons_keep_their_words_on_one_line(playground: PlaygroundPage, screen):
    page = playground.page
    page.set_viewport_size(SCREENS[screen])
    for name in ("Generate", "Stop", "Score this text", "Step"):
        button = page.get_by_role("button", name=name, exact=True)
        lines = button.evaluate(
            "(b) => { const r = document.createRange(); r.selectNodeContents(b);"
            " return new Set([...r.getClientRects()].map((rect) => Math.round(rect.top))).size; }"
        )
        assert lines == 1, f"{name!r} wraps on {lines} lines at {screen}"


def test_the_draw_label_sits_beside_the_marker_never_across_it(playground: PlaygroundPage):
    """The label "u = …" above the draw bar was centred on the marker's head for u between 0.2 and
    0.8, so the head covered its middle digits."""
    playground.run("Once upon a time", temperature=1, top_k=0, top_p=1, min_p=0, seed=11, max_tokens=12, top_n=5)
    tokens = playground.events("token")
    middle = [i for i, t in enumerate(tokens) if t["draw"] is not None and 0.2 < t["draw"] < 0.8]
    assert len(middle) >= 2, "with this seed some draws fall mid-bar, where the label used to be centred"
    for i in [*middle[:3], *[i for i, t in enumerate(tokens) if t["draw"] is not None and t["draw"] > 0.75][:1]]:
        playground.tokens.nth(i).click()
        expect(playground.inspector).to_have_attribute("data-index", str(i))
        bar = playground.inspector.locator("svg.draw-bar")
        label = bar.locator("text.draw-label").bounding_box()
        head = bar.locator("path.draw-marker-head").bounding_box()
        apart = label["x"] >= head["x"] + head["width"] or label["x"] + label["width"] <= head["x"]
        assert apart, (tokens[i]["draw"], label, head)
        assert label["x"] >= bar.bounding_box()["x"] - 0.5  # and inside the bar's box
        assert label["x"] + label["width"] <= bar.bounding_box()["x"] + bar.bounding_box()["width"] + 0.5


def test_the_live_comparisons_presets_fit_a_phone(page, daphne_server):
    page.set_viewport_size(SCREENS["phone"])
    page.goto(daphne_server.url + "/compare/live")
    for name in ("Base vs instruct", "Demo: JSON with and without a grammar"):
        button = page.get_by_role("button", name=name, exact=True)
        expect(button).to_be_visible()
        box = button.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= SCREENS["phone"]["width"], (name, box)
    assert page.evaluate("document.documentElement.scrollWidth") <= SCREENS["phone"]["width"]  # nothing sideways
