"""The live comparison end to end (/compare/live): a real daphne, the real model, Debian's Chromium.

Two columns of settings (temperature 0.2 and 1.5, one seed) stream side by side; the first
divergence is marked while they run; the saved comparison's permalink shows both runs with only
the temperature differing; the page's address re-runs the same thing; a bad value gets the
server's error next to its column's field.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.playground_page import page_errors

pytestmark = pytest.mark.e2e

PROMPT = "The capital of France is"
SEED = "3"  # with this prompt, 0.2 and 1.5 agree on " Paris." and part ways after it

# Records when rows are added to the live table and when the comparison link appears, to tell a
# stream from a table filled at the end.
WATCH = """() => {
  window.__rows = [];
  const body = document.querySelector("[data-testid=live-aligned] tbody");
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) if (n.nodeName === "TR") window.__rows.push(performance.now());
  }).observe(body, {childList: true});
  const link = document.querySelector("[data-testid=comparison-link]");
  new MutationObserver(() => { if (!link.hidden) window.__linkShown ??= performance.now(); })
    .observe(link, {attributes: true});
}"""


def column_tokens(page: Page, n: int) -> list[str]:
    return page.locator(f"[data-testid=live-aligned] tbody td:nth-child({n + 1}) .token").all_inner_texts()


def test_two_temperatures_stream_side_by_side_and_save_a_comparison(page: Page, browser: Browser, daphne_server, artifacts):
    errors = page_errors(page)
    page.goto(daphne_server.url + "/history")
    page.get_by_role("link", name="Run settings side by side").click()
    page.wait_for_url("**/compare/live")

    page.get_by_label("Prompt", exact=True).fill(PROMPT)
    page.get_by_label("Seed", exact=True).fill(SEED)
    page.get_by_label("Max tokens").fill("12")
    first, second = page.locator("#c1"), page.locator("#c2")
    first.get_by_label("Temperature").fill("0.2")
    first.get_by_label("Top-p").fill("")
    second.get_by_label("Temperature").fill("1.5")
    second.get_by_label("Top-p").fill("")
    page.evaluate(WATCH)
    page.get_by_role("button", name="Run side by side").click()

    link = page.get_by_test_id("comparison-link")
    expect(link).to_be_visible(timeout=60_000)
    expect(page.get_by_test_id("live-status")).to_contain_text("Done: 2 runs saved.")

    # Streamed: rows arrived one event at a time, before the runs had all ended.
    rows_at, link_at = page.evaluate("[window.__rows, window.__linkShown]")
    assert len(set(rows_at)) > 1 and rows_at[0] < link_at
    low, high = column_tokens(page, 1), column_tokens(page, 2)
    assert len(low) == 12 or "stopped by eos" in page.locator("th[data-column='1'] .column-status").inner_text()
    assert len(high) >= 1
    tint = page.locator(".live-aligned .token").first.evaluate("el => getComputedStyle(el).backgroundColor")
    assert tint not in ("", "transparent", "rgba(0, 0, 0, 0)")

    # The first divergence: one row marked, the earlier rows agree, and the note says where.
    marked = page.locator("[data-testid=live-aligned] tbody tr.first-divergence")
    expect(marked).to_have_count(1)
    position = int(marked.get_attribute("data-index"))
    assert (
        position > 0
        and low[:position] == high[:position]
        and (position >= len(low) or position >= len(high) or low[position] != high[position])
    )
    expect(marked.locator(".divergence-mark")).to_have_text("first divergence")
    expect(page.get_by_test_id("live-first-divergence")).to_contain_text(f"First divergence at position {position + 1}:")
    expect(page.get_by_test_id("live-first-divergence")).to_contain_text("rows after it are greyed")  # and why, in words
    later = page.locator("[data-testid=live-aligned] tbody tr.other-context")  # they part after " Paris."
    assert later.count() > 0 and "gradient" in later.first.locator("th").evaluate("el => getComputedStyle(el).backgroundImage")
    page.screenshot(path=str(artifacts / "live-compare.png"), full_page=True)

    # The settings are in the address; the runs are in this browser's history, with delete tokens.
    address = page.url
    query = parse_qs(urlsplit(address).query)
    assert query["seed"] == [SEED] and query["c1.temperature"] == ["0.2"] and query["c2.temperature"] == ["1.5"]
    ids = link.get_attribute("href").removeprefix("/compare/").split(",")
    stored = json.loads(page.evaluate("localStorage.getItem('playground.runs.v1')"))
    assert {r["id"] for r in stored} >= set(ids) and all(r["delete_token"] for r in stored if r["id"] in ids)

    # The saved comparison: both runs, only the temperature differs, the same first divergence.
    link.click()
    page.wait_for_url(f"**/compare/{ids[0]},{ids[1]}")
    differing = page.get_by_test_id("differing")
    expect(differing.locator("tbody tr")).to_have_count(1)
    expect(differing.locator("tr[data-setting='params.temperature']")).to_contain_text("0.2")
    expect(differing.locator("tr[data-setting='params.temperature']")).to_contain_text("1.5")
    expect(page.get_by_test_id("first-divergence")).to_contain_text(f"position {position + 1}")
    expect(page.get_by_test_id("seed-note")).to_contain_text(f"seed {SEED}")

    # The copied address, in a fresh browser, restores the form and runs the same tokens again.
    fresh = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        other = fresh.new_page()
        other_errors = page_errors(other)
        other.goto(address)
        expect(other.locator("#c2-temperature")).to_have_value("1.5")
        expect(other.get_by_label("Seed", exact=True)).to_have_value(SEED)
        other.get_by_role("button", name="Run side by side").click()
        expect(other.get_by_test_id("comparison-link")).to_be_visible(timeout=60_000)
        assert column_tokens(other, 1) == low and column_tokens(other, 2) == high
        assert other_errors == []
    finally:
        fresh.close()
    assert errors == []


def test_errors_are_shown_next_to_their_column(page: Page, daphne_server, artifacts):
    errors = page_errors(page)
    query = {"prompt": PROMPT, "max_tokens": 3, "columns": 2, "c1.temperature": 0.7, "c2.top_p": 5, "c2.other": "{bad"}
    page.goto(f"{daphne_server.url}/compare/live?{urlencode(query)}")

    # A JSON box that is not JSON is caught before anything is sent.
    page.get_by_role("button", name="Run side by side").click()
    expect(page.locator("#c2-other-error")).to_contain_text("not valid JSON")
    expect(page.locator("#c2-other")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("live-status")).to_have_text("Not run: fix the marked fields.")
    expect(page.locator("[data-testid=live-aligned] tbody tr")).to_have_count(0)

    # The server's error for top-p 5 lands next to column 2's top-p; column 1 runs and is saved.
    page.locator("#c2-other").fill("")
    page.get_by_label("Seed", exact=True).fill("")  # drawn in the browser
    page.get_by_role("button", name="Run side by side").click()
    error = page.locator("#c2-top_p-error")
    expect(error).to_be_visible(timeout=30_000)
    expect(error).to_contain_text("Top-p must be")  # the page's label, not the wire name top_p
    expect(error).not_to_contain_text("params.")
    expect(page.locator("#c2-top_p")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#c1-top_p-error")).to_be_hidden()
    expect(page.locator("th[data-column='2'] .column-status")).to_contain_text("error")
    expect(page.get_by_test_id("live-status")).to_contain_text("fewer than two runs were saved", timeout=30_000)
    expect(page.get_by_test_id("comparison-link")).to_be_hidden()
    page.screenshot(path=str(artifacts / "live-compare-error.png"), full_page=True)

    # The drawn seed: shown, in the address, and the saved run used exactly it (beyond 2^53 often).
    seed = page.get_by_label("Seed", exact=True).input_value()
    assert re.fullmatch(r"\d+", seed) and int(seed) < 2**62
    assert parse_qs(urlsplit(page.url).query)["seed"] == [seed]
    run_id = json.loads(page.evaluate("localStorage.getItem('playground.runs.v1')"))[0]["id"]
    saved = page.request.get(f"{daphne_server.url}/r/{run_id}.json").json()
    assert saved["run"]["request"]["seed"] == int(seed)
    assert errors == []
