"""Edit and continue, and the whole tree as one permalink, in Chromium: select a position (by
keyboard at desktop width, by tapping on a phone), edit the text from there, continue; the edit is a
branch whose typed tokens the inspector calls "typed by you"; the tree's permalink, opened in a
fresh browser, draws the same tree."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.playground_page import PlaygroundPage

pytestmark = pytest.mark.e2e

EDIT = " Lyon, of course"
FIELD = "Text from this token on (edit it freely)"


def _edited_branch(playground: PlaygroundPage, root: dict) -> dict:
    """Checks the edit's requests and stream; returns its `done` frame."""
    page = playground.page
    expect(page.locator("#branches button.branch")).to_have_count(2)  # launched: the status left "done"
    done = playground.wait_done()
    tokenize = playground.sent_of("tokenize")[-1]
    assert (tokenize["text"], tokenize["mode"]) == (EDIT, "plain")  # the edit, tokenized alone
    typed_ids = [t["id"] for t in playground.request_frames("tokenize")[-1]["tokens"]]
    sent = playground.sent_of("generate")[-1]
    kept = [t["id"] for t in root["tokens"][:2]]
    assert sent["prefix_tokens"] == kept + typed_ids and sent["typed_tokens"] == len(typed_ids)
    assert (sent["parent_run"], sent["branch_index"]) == (root["done"]["run_id"], 2)
    tokens = playground.events("token")
    assert [t["id"] for t in tokens[: len(kept) + len(typed_ids)]] == kept + typed_ids
    assert all(t["forced"] for t in tokens[: len(kept) + len(typed_ids)])
    expect(page.locator("#output .token.typed")).to_have_count(len(typed_ids))
    assert "".join(page.locator("#output .token.typed").all_text_contents()) == EDIT
    expect(page.locator("#branches button.branch")).to_have_count(2)
    expect(page.locator("#branches button.branch").nth(1)).to_contain_text(f'typed "{EDIT}"')
    return done


def _root(playground: PlaygroundPage) -> dict:
    done = playground.run("The capital of France is", max_tokens=6, seed=1)
    return {"done": done, "tokens": playground.events("token")}


def _same_tree_in_a_fresh_browser(browser: Browser, url: str, root_id: str, edit_id: str, viewport: dict) -> None:
    fresh = browser.new_context(viewport=viewport)
    try:
        page = fresh.new_page()
        page.goto(url)
        tree = page.get_by_test_id("tree")
        expect(tree.locator("li[data-run]")).to_have_count(2)
        expect(tree.locator(f"li[data-run='{root_id}'] li[data-run='{edit_id}']")).to_have_count(1)  # under its parent
        expect(page.get_by_test_id("change")).to_have_text([f'text edited: typed "{EDIT}" ({_count(page, edit_id)} tokens)'])
        page.locator(f"li[data-run='{edit_id}'] > a").click()  # each node opens its run
        page.wait_for_url(f"**/r/{edit_id}")
        expect(page.locator("#output .token.typed").first).to_be_visible()
        page.locator("#output .token.typed").first.focus()
        expect(page.locator("#inspector")).to_contain_text("typed by you")
    finally:
        fresh.close()


def _count(page: Page, run_id: str) -> int:
    data = page.evaluate(f"fetch('/r/{run_id}.json').then((r) => r.json())")
    return data["run"]["request"]["typed_tokens"]


def test_edit_and_continue_by_keyboard_then_the_tree_permalink(playground: PlaygroundPage, browser: Browser):
    page = playground.page
    root = _root(playground)
    # Select token 3 by keyboard: the output is focused after the run, its first token a Tab on.
    page.locator("#output .token").first.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")  # pins it: its step, and the edit field, below
    field = page.get_by_label(FIELD, exact=True)
    expected = "".join(t["text"] for t in root["tokens"][2:]) + (root["done"].get("tail") or "")
    expect(field).to_have_value(expected)
    field.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type(EDIT)
    playground.frames.clear()
    page.keyboard.press("Control+Enter")
    done = _edited_branch(playground, root)
    # The inspector of a typed token says so.
    page.locator("#output .token.typed").first.focus()
    expect(page.locator("#inspector")).to_contain_text("typed by you")
    expect(page.locator("#inspector")).to_contain_text("Typed by you")
    link = page.locator("[data-action=tree-permalink]")
    expect(link).to_have_attribute("href", f"/tree/{root['done']['run_id']}")
    playground.shot("edit-continue-desktop")
    url = playground.base_url + link.get_attribute("href")
    _same_tree_in_a_fresh_browser(browser, url, root["done"]["run_id"], done["run_id"], {"width": 1280, "height": 800})


def test_edit_and_continue_on_a_phone(playground: PlaygroundPage, browser: Browser):
    page = playground.page
    page.set_viewport_size({"width": 390, "height": 844})
    root = _root(playground)
    page.locator("#output .token").nth(2).click()  # a tap pins it, its alternatives docked at the bottom
    page.get_by_role("button", name="Close alternatives").click()  # out of the way of the edit
    field = page.get_by_label(FIELD, exact=True)
    field.scroll_into_view_if_needed()
    field.fill(EDIT)
    playground.frames.clear()
    page.get_by_role("button", name="Continue from the edit").click()
    done = _edited_branch(playground, root)
    playground.shot("edit-continue-phone")
    url = playground.base_url + page.locator("[data-action=tree-permalink]").get_attribute("href")
    _same_tree_in_a_fresh_browser(browser, url, root["done"]["run_id"], done["run_id"], {"width": 390, "height": 844})
