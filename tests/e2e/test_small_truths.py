"""Small untruths put right: the worker-load line follows the present after a run; /batch speaks in
words a visitor knows; /compare shows no raw markup and counts positions from 1 like the
inspector; /history shows each run's mode and keeps its buttons' words whole."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.playground_page import PlaygroundPage

pytestmark = pytest.mark.e2e

ONE_LINE = """el => { const r = document.createRange(); r.selectNodeContents(el);
  return new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size; }"""


def test_the_worker_load_line_reflects_the_present_after_a_run(playground: PlaygroundPage):
    # Long enough (end-of-sequence held off) to be still streaming at the poll after its wait, where
    # the line used to stop: "1 stream decoding" stayed on screen after the run ended.
    done = playground.run(min_tokens=150, max_tokens=150, seed=1)
    assert done["usage"]["completion_tokens"] == 150
    line = playground.page.locator("#worker-load")
    # However busy it looked while the run streamed, it settles on the idle workers it now has.
    expect(line).to_contain_text(re.compile(r": 0 streams decoding \(0 of \d+ batch rows in use\), 0 waiting"), timeout=15_000)
    expect(line).to_have_attribute("data-waiting", "0")
    assert line.evaluate("el => getComputedStyle(el).fontWeight") == "400"


def test_the_batch_page_names_its_source_in_plain_words(page: Page, daphne_server):
    page.goto(daphne_server.url + "/batch")
    about = page.locator(".batch-about")
    expect(about).to_contain_text("guide to language-model sampling")
    assert "seed text" not in about.inner_text()


def test_compare_counts_from_1_and_history_shows_the_mode(playground: PlaygroundPage):
    page = playground.page
    first = playground.run("The capital of France is", temperature=0.2, max_tokens=8, seed=3)
    page.get_by_label("Chat", exact=True).check()
    second = playground.run("Name a city in France.", temperature=1.5, max_tokens=8, seed=3)
    ids = [first["run_id"], second["run_id"]]

    page.goto(f"{playground.base_url}/compare/{','.join(ids)}")
    rows = page.locator("[data-testid=aligned] tbody tr")
    expect(rows.first.locator("th")).to_have_text(re.compile(r"^1\b"))
    for i in range(rows.count()):
        assert rows.nth(i).locator("th").inner_text().split()[0] == str(int(rows.nth(i).get_attribute("data-index")) + 1)
    diverged = page.locator("[data-testid=aligned] tr.first-divergence")
    expect(diverged).to_have_count(1)  # the prompts differ, so the runs part at once
    expect(page.get_by_test_id("first-divergence")).to_have_text(
        f"First divergence: position {int(diverged.get_attribute('data-index')) + 1}."
    )
    assert "`" not in page.locator("article.comparison").inner_text()

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(playground.base_url + "/history")
    history = page.get_by_test_id("history")
    for run_id, mode in zip(ids, ["completion", "chat"], strict=True):
        expect(history.locator(f"tr[data-run-id='{run_id}'] td.mode")).to_have_text(mode)
    expect(history.locator("thead th", has_text=re.compile(r"^Mode$"))).to_have_count(1)
    buttons = history.locator("tbody button")
    expect(buttons.first).to_be_visible()
    for button in buttons.all():
        assert button.evaluate(ONE_LINE) == 1, f"{button.inner_text()!r} wraps"
