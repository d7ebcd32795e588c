"""The end-of-sequence token on the page: shown by its name as the end of the text, announced as
what it is (not as a "partial character"), named so in the inspector; copied text stays the
model's."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage

pytestmark = pytest.mark.e2e


def test_the_end_token_is_shown_and_announced_as_the_end(playground: PlaygroundPage):
    page = playground.page
    page.get_by_label("Chat", exact=True).check()
    done = playground.run("What is 2+2?", temperature=0, max_tokens=40)
    assert done["reason"] == "eos"  # greedy: the model answers briefly and ends
    last = playground.events("token")[-1]
    assert last["text"] == "" and last["token"].startswith("<|")
    end = page.locator(f"#output .token[data-index='{last['index']}']")
    expect(end).to_have_class("token eos")
    expect(end).to_have_attribute("aria-label", f"end of sequence ({last['token']})")
    label = end.evaluate("el => getComputedStyle(el, '::after').content")
    assert last["token"] in label and "end" in label
    expect(page.locator(".token[aria-label='partial character']")).to_have_count(0)
    assert page.locator("#output").inner_text() == done["text"]  # the label is not part of the text
    end.click()
    expect(page.locator(".inspector-title")).to_contain_text("the end-of-sequence token")
