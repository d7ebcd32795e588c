"""The inspector's draw bar on a real run at T 1.5 (the issue's setting): a token picked from
outside the five listed alternatives is drawn at its real place, the event's ``draw_interval``,
after an "other tokens" segment, and the marker at u falls inside it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage, quote_token

pytestmark = pytest.mark.e2e

WIDTH = 300  # the bar's viewBox width (draw-bar.js)


def test_a_token_outside_the_top_n_is_drawn_where_u_fell(playground: PlaygroundPage) -> None:
    playground.run("Once upon a time", temperature=1.5, top_k=0, top_p=1, min_p=0, seed=5, max_tokens=40, top_n=5)
    tokens = playground.events("token")
    outside = [i for i, t in enumerate(tokens) if t["id"] not in {a["id"] for a in t["alternatives"]}]
    assert outside, "at T 1.5 some token of 40 comes from outside the top 5"
    for i in outside[:3]:
        token = tokens[i]
        start, end = token["draw_interval"]
        assert start <= token["draw"] < end
        playground.tokens.nth(i).click()
        expect(playground.inspector).to_have_attribute("data-index", str(i))
        bar = playground.inspector.locator("svg.draw-bar")
        chosen = bar.locator("rect.seg.chosen")
        expect(chosen).to_have_count(1)
        assert float(chosen.get_attribute("x")) == pytest.approx(start * WIDTH, abs=0.01)
        marker = float(bar.locator("line.draw-marker").get_attribute("x1")) / WIDTH
        assert abs(marker - token["draw"]) < 0.001
        # The unlisted mass ahead of it is a segment of its own, ending where the token starts.
        others = bar.locator("rect.seg.others").evaluate_all(
            "els => els.map(e => [+e.getAttribute('x'), +e.getAttribute('width')])"
        )
        assert any(abs(x + w - start * WIDTH) < 0.02 for x, w in others)
        expect(bar.locator("text.chosen-name")).to_have_text(quote_token(token["token"]))  # too narrow to hold it
        assert bar.get_attribute("aria-label") == (
            f"Cumulative bar of the final probabilities; the draw u = {token['draw']:.4f} fell in "
            f"{quote_token(token['token'])}'s segment, from {start:.4f} to {end:.4f}"
        )
    playground.shot("draw-bar-outside-top-n")
