"""The form's dials as a newcomer meets them (dial-layout.js): the six main dials open, every other
dial in a closed group opened on purpose; a setting in the address that uses a hidden dial opens
its group; a group opened by hand is not remembered."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage

pytestmark = pytest.mark.e2e

MAIN = ["Temperature", "Top-k", "Top-p", "Min-p", "Max tokens", "Seed"]
HIDDEN = ["Mirostat", "XTC probability", "Epsilon cutoff", "Eta cutoff", "Repetition penalty", "Stop strings", "Top-N shown"]


def visible_dial_labels(playground: PlaygroundPage) -> list[str]:
    labels = playground.page.locator("#controls details.param-group .field > label")
    return [label.inner_text().strip() for label in labels.all() if label.is_visible()]


def test_a_fresh_page_shows_the_main_dials_and_hides_the_rest(playground: PlaygroundPage):
    page = playground.page
    assert visible_dial_labels(playground) == MAIN
    for name in HIDDEN:
        expect(page.get_by_label(name, exact=True)).to_be_hidden()
    page.locator("summary", has_text="Truncation").click()
    expect(page.get_by_label("Mirostat", exact=True)).to_be_visible()
    page.reload()
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.get_by_label("Mirostat", exact=True)).to_be_hidden()  # opened by hand: not remembered


def test_an_address_that_uses_a_hidden_dial_opens_its_group(playground: PlaygroundPage):
    page = playground.page
    page.goto(playground.base_url + "/?mirostat=2&repetition_penalty=1.3&top_n=7")
    page.locator("#connection[data-connected=true]").wait_for()
    for name, value in [("Mirostat", "2"), ("Repetition penalty", "1.3"), ("Top-N shown", "7")]:
        expect(page.get_by_label(name, exact=True)).to_be_visible()
        expect(page.get_by_label(name, exact=True)).to_have_value(value)
    expect(page.get_by_label("Stop strings", exact=True)).to_be_hidden()  # its group holds nothing set
    done = playground.run(max_tokens=4, seed=1)
    assert done["reason"] in {"eos", "max_tokens"}
    sent = playground.sent_of("generate")[-1]
    assert sent["params"]["mirostat"] == 2 and sent["params"]["repetition_penalty"] == 1.3 and sent["top_n"] == 7
