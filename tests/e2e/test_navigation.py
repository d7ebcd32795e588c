"""One navigation on every page (templates/_nav.html): the same links everywhere, the page shown
marked as current, the live comparison one click from the playground; and every page loads its
modules (static/shared/js among them) with no console error and no failed request."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Response, expect

from tests.e2e.playground_page import page_errors

pytestmark = pytest.mark.e2e

PAGES = {"/": "Playground", "/batch": "Batch", "/compare/live": "Compare settings", "/history": "History"}
LINKS = [("Playground", "/"), ("Batch", "/batch"), ("Compare settings", "/compare/live"), ("History", "/history")]


def failed_requests(page: Page) -> list[str]:
    """A list that fills with every response of status 400 or more the page receives."""
    failed: list[str] = []

    def record(response: Response) -> None:
        if response.status >= 400:
            failed.append(f"{response.status} {response.url}")

    page.on("response", record)
    return failed


@pytest.mark.parametrize("path", [*PAGES, "/r/no-such-run"])
def test_every_page_has_the_same_navigation(page: Page, daphne_server, path):
    errors = page_errors(page)
    failed = failed_requests(page) if path in PAGES else []
    page.goto(daphne_server.url + path)
    page.wait_for_load_state("networkidle")
    nav = page.get_by_role("navigation", name="Pages")
    expect(nav).to_have_count(1)
    links = nav.get_by_role("link")
    assert [(a.inner_text(), a.get_attribute("href")) for a in links.all()] == LINKS
    current = nav.locator("[aria-current=page]")
    if path in PAGES:
        expect(current).to_have_text(PAGES[path])
        assert failed == [], f"{path}: requests that failed: {failed}"
        assert errors == [], f"{path}: console errors: {errors}"
    else:
        expect(current).to_have_count(0)  # a saved run is none of the listed pages


def test_the_live_comparison_is_one_click_from_the_playground(page: Page, daphne_server):
    page.goto(daphne_server.url + "/")
    page.get_by_role("navigation", name="Pages").get_by_role("link", name="Compare settings").click()
    page.wait_for_url("**/compare/live")
    expect(page.get_by_role("heading", name="Run settings side by side")).to_be_visible()
