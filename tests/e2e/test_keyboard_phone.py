"""The playground by keyboard and on a phone: a skip link puts the output a Tab away; focus never
falls to the body when a run ends (Generate hands it to the output, Step keeps it); at
390 px wide Generate brings the status line and the first tokens into view, and the history lists
each run as a card."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage

pytestmark = pytest.mark.e2e

FOCUSED = (
    "() => { const el = document.activeElement; return el === document.body ? 'body' : el.id || el.className || el.tagName; }"
)


def test_after_generate_by_keyboard_focus_is_on_the_output(playground: PlaygroundPage):
    page = playground.page
    page.get_by_role("button", name="Generate").focus()
    page.keyboard.press("Enter")
    playground.wait_idle()
    expect(page.locator("#output")).to_be_focused()
    expect(page.locator("#inspector")).to_be_hidden()  # no token's inspector pops over the text
    page.keyboard.press("Tab")  # the first token is one Tab on, and the output's keys work there
    expect(page.locator("#output .token").first).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#output .token").nth(1)).to_be_focused()


def test_step_by_keyboard_keeps_focus_on_step(playground: PlaygroundPage):
    page = playground.page
    playground.set(seed=1)
    step = page.get_by_role("button", name="Step")
    step.focus()
    page.keyboard.press("Enter")
    playground.wait_idle()
    expect(step).to_be_focused()
    page.keyboard.press("Enter")  # and the next step is one key away
    playground.wait_idle()
    expect(page.locator("#output .token")).to_have_count(2)
    expect(step).to_be_focused()


def test_the_output_is_a_few_tabs_from_the_top(playground: PlaygroundPage):
    page = playground.page
    playground.run(max_tokens=6, seed=1)
    page.evaluate("() => { document.activeElement.blur(); document.body.tabIndex = -1; document.body.focus(); }")
    presses = 0
    for _ in range(3):
        page.keyboard.press("Tab")
        presses += 1
        if page.evaluate("() => document.activeElement.textContent") == "Skip to the output":
            break
    expect(page.get_by_role("link", name="Skip to the output")).to_be_focused()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    presses += 2
    expect(page.locator("#output .token").first).to_be_focused()
    assert presses <= 4, page.evaluate(FOCUSED)


def test_on_a_phone_generate_brings_the_status_and_first_tokens_into_view(playground: PlaygroundPage):
    page = playground.page
    page.set_viewport_size({"width": 390, "height": 844})
    playground.open()
    generate = page.get_by_role("button", name="Generate")
    generate.scroll_into_view_if_needed()
    expect(page.locator("#status")).not_to_be_in_viewport()  # the output sits below the form
    playground.frames.clear()
    generate.click()
    expect(page.locator("#status")).to_be_in_viewport()
    playground.wait_done()
    expect(page.locator("#status")).to_be_in_viewport()
    expect(page.locator("#output .token").first).to_be_in_viewport()
    playground.shot("phone-after-generate")


def test_on_a_phone_the_history_lists_each_run_as_a_card_of_named_values(playground: PlaygroundPage):
    page = playground.page
    page.set_viewport_size({"width": 390, "height": 844})
    playground.generate("The capital of France is", max_tokens=4)
    done = playground.wait_done()
    page.goto(playground.base_url + "/history")
    row = page.locator(f"[data-testid=history] tbody tr[data-run-id='{done['run_id']}']")
    expect(row).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing sideways
    prompt = row.locator("td").nth(1)
    # each value under its column's name (the header's own text), not eight columns a letter wide
    assert prompt.evaluate("td => getComputedStyle(td, '::before').content") == '"Prompt"'
    assert prompt.bounding_box()["width"] > 300
    expect(page.locator("[data-testid=history] thead")).not_to_be_in_viewport()
    playground.shot("phone-history")
