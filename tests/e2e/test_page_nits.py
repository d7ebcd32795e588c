"""Small truths of the playground page: every id is unique with both inspectors rendered (each token
described by its own inspector's summary); at 390 px the tint switch's legend sits on a line above
its two radios, which share one row, nothing wider than the screen; the watched tokens round-trip
through the address."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage

pytestmark = pytest.mark.e2e

DUPLICATE_IDS = """() => {
  const seen = {};
  for (const node of document.querySelectorAll("[id]")) seen[node.id] = (seen[node.id] ?? 0) + 1;
  return Object.entries(seen).filter(([, n]) => n > 1).map(([id]) => id);
}"""

DESCRIBED_INSIDE = """([token, panel]) => {
  const id = token.getAttribute("aria-describedby");
  const node = id && document.getElementById(id);
  return Boolean(node) && panel.contains(node);
}"""


def test_ids_are_unique_with_both_inspectors_rendered(playground: PlaygroundPage) -> None:
    page = playground.page
    playground.run("The capital of France is", temperature=0, max_tokens=3)
    output_token = playground.tokens.nth(0)
    output_token.click()
    main = page.locator("#inspector")
    expect(main).to_be_visible()
    assert page.evaluate(DESCRIBED_INSIDE, [output_token.element_handle(), main.element_handle()])
    prompt_token = page.locator("#prompt-surprisal [data-prompt-stream] .token").nth(1)
    prompt_token.click()
    prompt_panel = page.locator("#prompt-surprisal [data-prompt-inspector]")
    expect(prompt_panel).to_be_visible()
    assert page.evaluate(DESCRIBED_INSIDE, [prompt_token.element_handle(), prompt_panel.element_handle()])
    expect(main.locator(".inspector-summary")).to_have_count(1)  # still rendered beside the other
    assert page.evaluate(DUPLICATE_IDS) == []
    assert playground.errors == []


LINES = """(node) => {
  const box = node.getBoundingClientRect();
  const line = parseFloat(getComputedStyle(node).lineHeight) || parseFloat(getComputedStyle(node).fontSize) * 1.2;
  return {left: box.left, right: box.right, top: box.top, lines: Math.round(box.height / line)};
}"""


def test_at_390_px_the_tint_switch_legend_sits_above_whole_radios(playground: PlaygroundPage) -> None:
    page = playground.page
    page.set_viewport_size({"width": 390, "height": 844})
    playground.run("The capital of France is", temperature=0, max_tokens=3)
    switch = page.locator("#main [data-tint-switch]")
    expect(switch).to_be_visible()
    legend = switch.locator("legend").evaluate(LINES)
    labels = [label.evaluate(LINES) for label in switch.locator("label").all()]
    assert len(labels) == 2
    assert all(box["lines"] == 1 for box in [legend, *labels]), (legend, labels)  # nothing wraps
    assert legend["top"] < min(labels[0]["top"], labels[1]["top"])  # the legend on a line of its own
    assert labels[0]["top"] == labels[1]["top"] and labels[0]["right"] < labels[1]["left"], labels  # both in one row
    assert all(box["right"] <= 390 for box in [legend, *labels])
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    playground.shot("tint-switch-phone")
    assert playground.errors == []


def test_watched_tokens_round_trip_through_the_address(playground: PlaygroundPage) -> None:
    page = playground.page
    playground.open_group("Watched tokens")
    field = page.get_by_label("Word or #id to watch", exact=True)
    field.fill("#7042")
    field.press("Enter")
    field.fill(" Lyon")
    field.press("Enter")
    items = page.locator("[data-watch-list] li")
    expect(items).to_have_count(2, timeout=60_000)  # the word waits for its tokenize
    ids = [int(i) for i in items.evaluate_all("els => els.map(e => e.dataset.id)")]
    page.wait_for_function("() => new URLSearchParams(location.search).has('watch')")
    watched = json.loads(parse_qs(urlsplit(page.url).query)["watch"][0])
    assert [entry[0] for entry in watched] == ids and watched[0] == [7042, None]

    page.reload()
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.locator("#watch-editor")).to_have_attribute("open", "")
    expect(items).to_have_count(2)
    assert [int(i) for i in items.evaluate_all("els => els.map(e => e.dataset.id)")] == ids
    expect(items.nth(1).locator(".token-text")).to_have_text(json.dumps(watched[1][1], ensure_ascii=False))
    playground.run("The capital of France is", temperature=0, max_tokens=2)
    assert playground.sent_of("generate")[-1]["watch"] == ids
    assert playground.errors == []
