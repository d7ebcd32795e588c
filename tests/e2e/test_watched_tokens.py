"""Watched tokens on the page: a word is tokenized and watched by its first token, the run's
frames carry each watched token at every step, and the chart, its readout (by keyboard) and the
"why never" sentence show exactly those frames' numbers."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage, format_prob, quote_token

pytestmark = pytest.mark.e2e


def step_text(w: dict, chosen: int) -> str:
    """One watched token at one step as the readout words it (watch-facts.js stepText)."""
    raw_rank = "ruled out by the model" if w["raw_rank"] is None else f"rank {w['raw_rank']}"
    if w["removed_by"]:
        after = f"removed by {w['removed_by']}"
    else:
        after = "no chance" if w["rank"] is None else f"rank {w['rank']}" + (", chosen" if w["id"] == chosen else "")
    return f"{quote_token(w['token'])} raw {format_prob(w['raw_prob'])} ({raw_rank}) → final {format_prob(w['prob'])} ({after})"


def test_a_watched_word_is_followed_at_every_step_and_the_chart_shows_the_frames_numbers(playground: PlaygroundPage) -> None:
    page = playground.open().page
    playground.open_group("Watched tokens")
    field = page.get_by_label("Word or #id to watch", exact=True)
    field.fill(" Llanfairpwllgwyngyll")
    field.press("Enter")
    note = page.locator("[data-watch-note]")
    expect(note).to_contain_text("tokens (", timeout=60_000)  # the first tokenize waits for the worker
    # the field's own tokenize (the prompt's token chips send theirs too, in any order)
    (asked,) = [f for f in playground.sent_of("tokenize") if " Llanfairpwllgwyngyll" in json.dumps(f, ensure_ascii=False)]
    (answer,) = [f["tokens"] for f in playground.frames if f.get("request_id") == asked["request_id"] and "tokens" in f]
    assert len(answer) > 1
    expect(note).to_contain_text(f"watching its first, {quote_token(answer[0]['text'])} (id {answer[0]['id']})")
    page.get_by_role("button", name=f"Stop watching {quote_token(answer[0]['text'])}").click()
    expect(page.locator("[data-watch-list] li")).to_have_count(0)
    expect(field).to_be_focused()  # removing gives the field the focus back
    field.fill(" Lyon")
    field.press("Enter")
    expect(note).to_have_text(f"Watching {quote_token(' Lyon')} (id 38034).")
    field.fill("#7042")
    field.press("Enter")
    expect(page.locator("[data-watch-list] li")).to_have_count(2)

    playground.run("The capital of France is", temperature=0.8, top_p=0.5, seed=5, max_tokens=8)
    assert playground.sent_of("generate")[-1]["watch"] == [38034, 7042]
    tokens = playground.events("token")
    assert all([w["id"] for w in t["watched"]] == [38034, 7042] for t in tokens)

    section = page.locator("#watch-section")
    expect(section).to_be_visible()
    for token_id in (38034, 7042):
        for kind in ("raw", "final"):
            expect(section.locator(f"polyline.series.{kind}[data-id='{token_id}']")).to_have_count(1)
    chart = section.locator(".strip-focus")
    chart.focus()
    readout = section.locator("[data-watch-readout]")
    for i in range(3):
        page.keyboard.press("ArrowRight")
        expected = "; ".join(step_text(w, tokens[i]["id"]) for w in tokens[i]["watched"])
        expect(readout).to_have_text(f"Step {i + 1}: {expected}.")
        expect(playground.inspector).to_have_attribute("data-index", str(i))  # the token is pinned too

    lyon = [t["watched"][0] for t in tokens]
    removed = Counter(w["removed_by"] for w in lyon if w["removed_by"])
    why = section.locator("[data-watch-why] li").first
    assert any(t["id"] != 38034 for t in tokens)
    expect(why).to_contain_text(f"{quote_token(' Lyon')} was never chosen")
    for stage, count in removed.items():
        expect(why).to_contain_text(f"{stage} at {count} of {len(tokens)} steps")
    best = min(w["raw_rank"] for w in lyon)
    expect(why).to_contain_text(f"never in the top 20 (best rank {best})" if best > 20 else f"best rank {best} before sampling")
    assert not playground.errors
    playground.shot("watched-tokens")


def test_an_id_beyond_the_vocabulary_is_named_at_the_field(playground: PlaygroundPage) -> None:
    page = playground.open().page
    playground.open_group("Watched tokens")
    field = page.get_by_label("Word or #id to watch", exact=True)
    field.fill("#9999999")
    field.press("Enter")
    page.get_by_label("Prompt", exact=True).fill("Hi")
    page.get_by_role("button", name="Generate").click()
    error = page.locator("#watch-words-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("Watched tokens, entry 1 must be a token id")  # named as the page labels it
