"""The saved comparison's divergence, seen in Chromium at 1280×800 and on a 390×844 phone (issue 30,
item 6): three runs from the live comparison with one seed — run 2 with run 1's settings, run 3
hotter. Run 2's TV is 0 at every position (the same settings and the same text so far: one
distribution); run 3's is a range up to its first divergence and absent after it; the rows after
the divergence are plainly grey, under a line that says why, and the caption says it in words."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.playground_page import page_errors

pytestmark = pytest.mark.e2e

PROMPT = "The capital of France is"
SEED = "3"  # with this prompt, 0.2 and 1.5 agree on " Paris." and part ways after it (test_live_compare.py)
SCREENS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def comparison_url(browser, daphne_server) -> str:
    """Three runs saved by the live comparison: T 0.2, T 0.2 again, T 1.5, one seed."""
    context = browser.new_context(viewport=SCREENS["desktop"])
    page = context.new_page()
    page.goto(daphne_server.url + "/compare/live")
    page.get_by_label("Prompt", exact=True).fill(PROMPT)
    page.get_by_label("Seed", exact=True).fill(SEED)
    page.get_by_label("Max tokens").fill("10")
    page.get_by_role("button", name="Add a column").click()
    for n, temperature in ((1, "0.2"), (2, "0.2"), (3, "1.5")):
        column = page.locator(f"#c{n}")
        column.get_by_label("Temperature").fill(temperature)
        column.get_by_label("Top-p").fill("")
    page.get_by_role("button", name="Run side by side").click()
    link = page.get_by_test_id("comparison-link")
    expect(link).to_be_visible(timeout=120_000)
    url = daphne_server.url + link.get_attribute("href")
    context.close()
    return url


def background(locator) -> str:
    return locator.evaluate("el => getComputedStyle(el).backgroundImage + ' ' + getComputedStyle(el).backgroundColor")


@pytest.mark.parametrize("screen", SCREENS, ids=list(SCREENS))
def test_tv_is_0_for_the_same_settings_a_range_before_the_divergence_and_absent_after(
    page: Page, comparison_url: str, artifacts, screen
):
    errors = page_errors(page)
    page.set_viewport_size(SCREENS[screen])
    page.goto(comparison_url)
    rows = page.locator("[data-testid=aligned] tbody tr[data-index]")
    count = rows.count()
    marked = page.locator("[data-testid=aligned] tbody tr.first-divergence")
    expect(marked).to_have_count(1)
    first = int(marked.get_attribute("data-index"))
    assert 0 < first < count - 1, "run 3 parts from run 1 mid-run"

    for i in range(count):
        row = rows.nth(i)
        same_settings, hotter = row.locator("td.tv").nth(0), row.locator("td.tv").nth(1)
        # run 2 = run 1's settings: the same distribution at every step, whatever the top 5 leave out
        expect(same_settings).to_have_text("0")
        if i <= first:  # the same text so far: a distance, a range because only the top 5 are kept
            assert re.fullmatch(r"\d\.\d{3}(–\d\.\d{3})?", hotter.inner_text()), hotter.inner_text()
            assert "gradient" not in background(row.locator("th"))
        else:  # different text before: nothing to compare, greyed
            expect(hotter).to_have_attribute("data-tv", "other")
            assert not re.search(r"\d", hotter.inner_text())
            assert "gradient" in background(row.locator("th")), "the greying is plain to see"

    line = page.get_by_test_id("context-break")
    expect(line).to_be_visible()
    expect(line).to_contain_text(f"From position {first + 2} on, the runs go on from different text")
    line_box, screen_width = line.locator("span").bounding_box(), SCREENS[screen]["width"]
    assert line_box["x"] >= 0 and line_box["x"] + line_box["width"] <= screen_width, "readable without scrolling sideways"
    caption = page.get_by_test_id("aligned-caption")
    expect(caption).to_contain_text("with the same settings it is exactly 0")
    expect(caption).to_contain_text("shows no TV")
    page.screenshot(path=str(artifacts / f"compare-divergence-{screen}.png"), full_page=True)
    assert errors == []
