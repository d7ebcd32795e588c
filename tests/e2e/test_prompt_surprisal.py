"""The prompt's surprisal on the page: every prompt token tinted by the probability the model gave
it and inspectable, the perplexity and total bits, on the playground and the run's permalink;
"Score this text" with no generation; the entropy tint switch. At desktop and phone width, and by
keyboard."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage, format_prob

pytestmark = pytest.mark.e2e

PROMPT = "The capital of France is Paris. The capital of Italy is"
TINT_OF = """(el, [mode, value]) => import(new URL("../../shared/js/tint-mode.js", document.querySelector("script[type=module]").src))
  .then((m) => [getComputedStyle(el).getPropertyValue("--tint").trim(), (mode === "entropy" ? m.entropyColors(value) : null)?.tint])"""


def prompt_tokens(page):
    return page.locator("#prompt-surprisal [data-prompt-stream] .token")


def summary_of(record) -> str:
    return f"Perplexity {record['perplexity']:.2f} · {record['total_bits']:.1f} bits in all"


def test_a_runs_prompt_is_tinted_inspectable_and_kept_on_its_permalink(playground: PlaygroundPage):
    page = playground.page
    done = playground.run(PROMPT, temperature=0, max_tokens=2)
    assert playground.sent_of("generate")[-1]["prompt_scores"] is True
    (surprisal,) = playground.events("prompt_surprisal")
    tokens = prompt_tokens(page)
    expect(tokens).to_have_count(surprisal["count"])
    expect(page.locator("#prompt-surprisal [data-prompt-summary]")).to_contain_text(summary_of(surprisal))
    expect(tokens.nth(0)).to_have_class(re.compile(r"\bunscored\b"))  # nothing predicts the first token
    second = surprisal["tokens"][1]
    assert float(tokens.nth(1).get_attribute("data-prob")) == pytest.approx(second["prob"])
    tokens.nth(1).click()
    inspector = page.locator("#prompt-surprisal [data-prompt-inspector]")
    expect(inspector).to_be_visible()
    expect(inspector.locator(".inspector-title")).to_contain_text("Prompt token 2")
    expect(inspector.locator(".chosen-prob")).to_have_text(format_prob(second["prob"]))
    expect(inspector.locator("tbody tr")).to_have_count(
        len(second["alternatives"]) + (second["rank"] > len(second["alternatives"]))
    )
    playground.shot("prompt-surprisal-desktop")

    page.goto(f"{playground.base_url}/r/{done['run_id']}")
    saved = prompt_tokens(page)
    expect(saved).to_have_count(surprisal["count"])
    expect(page.locator("#prompt-surprisal [data-prompt-summary]")).to_contain_text(summary_of(surprisal))
    saved.nth(1).click()
    expect(page.locator("#prompt-surprisal .inspector-title")).to_contain_text("Prompt token 2")
    assert playground.errors == []


def test_score_this_text_scores_without_generating(playground: PlaygroundPage):
    page = playground.page
    page.get_by_label("Prompt", exact=True).fill(PROMPT)
    playground.frames.clear()
    page.get_by_role("button", name="Score this text").click()
    expect(page.locator("#status")).to_contain_text("nothing generated")
    assert playground.sent_of("generate") == [] and len(playground.sent_of("score")) == 1
    (answer,) = playground.request_frames("score")
    expect(prompt_tokens(page)).to_have_count(len(answer["tokens"]))
    expect(playground.tokens).to_have_count(0)
    assert playground.errors == []


def test_the_entropy_switch_retints_output_and_prompt_by_keyboard(playground: PlaygroundPage):
    page = playground.page
    playground.run(PROMPT, temperature=0, max_tokens=3)
    token = playground.events("token")[0]
    (surprisal,) = playground.events("prompt_surprisal")
    probability = page.get_by_role("radio", name="probability")
    probability.focus()
    page.keyboard.press("ArrowRight")  # a radio group: the arrow keys choose
    expect(page.get_by_role("radio", name="entropy before sampling")).to_be_checked()
    expect(page.locator("[data-tint-legend=entropy]")).to_be_visible()
    expect(page.locator("#legend")).to_be_hidden()
    shown, expected = playground.tokens.nth(0).evaluate(TINT_OF, ["entropy", token["entropy"]["before"]])
    assert shown == expected
    second = prompt_tokens(page).nth(1)
    shown, expected = second.evaluate(TINT_OF, ["entropy", surprisal["tokens"][1]["entropy"]])
    assert shown == expected
    # The prompt's tokens by keyboard: one tab stop, arrows between tokens, the inspector on focus.
    prompt_tokens(page).nth(0).focus()
    page.keyboard.press("ArrowRight")
    expect(second).to_be_focused()
    expect(page.locator("#prompt-surprisal .inspector-title")).to_contain_text("Prompt token 2")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    expect(second).to_be_focused()  # the roving tab stop stays on the token last visited
    page.get_by_role("radio", name="probability").check()
    expect(page.locator("#legend")).to_be_visible()
    assert float(playground.tokens.nth(0).get_attribute("data-prob")) == pytest.approx(token["prob"])
    assert playground.errors == []


def test_on_a_phone_the_prompt_view_fits_and_opens_on_tap(playground: PlaygroundPage):
    page = playground.page
    page.set_viewport_size({"width": 390, "height": 844})
    playground.run(PROMPT, temperature=0, max_tokens=2)
    view = page.locator("#prompt-surprisal")
    expect(view).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    prompt_tokens(page).nth(2).click()
    expect(page.locator("#prompt-surprisal [data-prompt-inspector]")).to_be_visible()
    expect(page.locator("#prompt-surprisal .inspector-title")).to_contain_text("Prompt token 3")
    playground.shot("prompt-surprisal-phone")
    assert playground.errors == []
