"""The guided walk of the loop on the person's own run: each step points at the part of the page
that shows it and tells that step's real numbers, checked against the run's frames; Next, Back and
Escape by keyboard, and at phone width."""

from __future__ import annotations

import math
import re

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage, format_prob, quote_token

pytestmark = pytest.mark.e2e

WALK_TARGET = re.compile(r"\bwalk-target\b")
SETTINGS = {"temperature": 0.8, "top_k": 40, "top_p": 0.9, "seed": 3, "max_tokens": 6}


def start_walk(playground: PlaygroundPage, index: int) -> dict:
    playground.run("The capital of France is", **SETTINGS)
    token = playground.events("token")[index]
    playground.tokens.nth(index).click()
    playground.page.get_by_role("button", name="Walk through this step of the loop").click()
    return token


def test_each_step_tells_the_runs_own_numbers_and_points_at_them(playground: PlaygroundPage) -> None:
    page = playground.open().page
    token = start_walk(playground, 2)
    walk = page.locator("#walk")
    title, text = walk.locator("[data-walk-title]"), walk.locator("[data-walk-text]")
    name = quote_token(token["token"])
    expect(walk).to_be_visible()
    expect(page.get_by_role("button", name="Next")).to_be_focused()

    expected = [
        (
            "1. Logits, shown as log-probabilities",  # the trace has no raw logit: the number is ln p, named so
            "#prompt-tokens",
            ["position 3", f"{name} (id {token['id']})", f"ln p = {math.log(token['raw_prob']):.4f}", "does not send the logits"],
        ),
        ("2. Softmax", "#inspector table.alternatives", [f"{name} gets {format_prob(token['raw_prob'])} from the model alone"]),
        ("3. Temperature", "#temperature", ["T = 0.8", f"{token['entropy']['before']:.2f} nats"]),
        (
            "4. Truncation",
            "#inspector .step-details",
            [f"{s['name']} kept {s['kept']} token" for s in token["stages"] if s["name"] != "temperature"]
            + [f"ends with {format_prob(token['prob'])}"],
        ),
        (
            "5. The draw",
            "#inspector .draw-figure",
            [f"u = {token['draw']:.4f}", f"[{token['draw_interval'][0]:.4f}, {token['draw_interval'][1]:.4f})"],
        ),
        ("6. Append", "#output .token >> nth=2", [f"{name} is appended as token 3 of the output"]),
    ]
    assert [s["name"] for s in token["stages"]][-2:] == ["top_k", "top_p"]  # the run's own chain
    for i, (heading, target, parts) in enumerate(expected):
        expect(title).to_have_text(heading)
        for part in parts:
            expect(text).to_contain_text(part)
        pointed = page.locator(target).first
        if target == "#temperature":  # the field that holds the control
            pointed = pointed.locator("xpath=ancestor::div[contains(@class, 'field')][1]")
        expect(pointed).to_have_class(WALK_TARGET)
        expect(page.locator(".walk-target")).to_have_count(1)
        if i < len(expected) - 1:
            page.keyboard.press("Enter")  # Next has focus
    page.keyboard.press("ArrowLeft")
    expect(title).to_have_text("5. The draw")
    walk.get_by_role("button", name="Back").click()
    expect(title).to_have_text("4. Truncation")
    page.keyboard.press("Escape")
    expect(walk).to_be_hidden()
    expect(page.locator(".walk-target")).to_have_count(0)
    expect(page.get_by_role("button", name="Walk through this step of the loop")).to_be_focused()
    assert not playground.errors


def test_at_phone_width_the_panel_and_what_it_points_at_are_in_view(playground: PlaygroundPage) -> None:
    page = playground.page
    page.set_viewport_size({"width": 390, "height": 844})
    playground.open()
    token = start_walk(playground, 0)
    walk = page.locator("#walk")
    expect(walk).to_be_visible()
    for _ in range(4):
        page.keyboard.press("Enter")
    expect(walk.locator("[data-walk-title]")).to_have_text("5. The draw")
    expect(walk.locator("[data-walk-text]")).to_contain_text(f"u = {token['draw']:.4f}")
    box = walk.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["y"] >= 0 and box["y"] + box["height"] <= 844
    target = page.locator(".walk-target").bounding_box()
    assert target["y"] < 844 and target["y"] + target["height"] > 0  # scrolled into view
    playground.shot("guided-walk-phone")
