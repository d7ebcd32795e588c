"""The playground page against a real daphne, the real model and Debian's Chromium.

Each test drives the page as a person would and checks what it shows against the websocket frames
the server sent. Screenshots of the main states go to test-artifacts/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage, visible_whitespace

pytestmark = pytest.mark.e2e


def assert_tokens_match_frames(view: PlaygroundPage) -> list[dict]:
    """One tinted element per `token` frame, in order, with the frame's text piece."""
    frames = view.events("token")
    assert [t["index"] for t in frames] == list(range(len(frames)))
    assert view.tokens.count() == len(frames)
    shown = view.tokens.evaluate_all(
        "els => els.map(el => ({text: el.textContent, pending: el.classList.contains('pending'),"
        " eos: el.classList.contains('eos'), tint: getComputedStyle(el).backgroundColor, prob: el.dataset.prob}))"
    )
    for frame, element in zip(frames, shown):
        assert element["text"] == frame["text"]
        end = frame["text"] == "" and frame["token"].startswith("<|") and frame["token"].endswith("|>")
        assert element["eos"] == end  # the end-of-sequence token is shown as the end
        assert element["pending"] == (frame["text"] == "" and not end)  # a partial character gets a placeholder
        assert element["tint"] not in ("", "transparent", "rgba(0, 0, 0, 0)")
        assert float(element["prob"]) == frame["prob"]
    return frames


def test_greedy_run_streams_tokens_and_the_inspector_shows_the_sent_numbers(playground: PlaygroundPage) -> None:
    page = playground.page
    playground.generate("The capital of France is", temperature=0, max_tokens=12, top_n=5, seed=None)
    expect(playground.tokens.first).to_have_text(" Paris", timeout=60_000)
    done = playground.wait_done()
    started = playground.event("started")
    frames = assert_tokens_match_frames(playground)
    assert frames[0]["text"] == " Paris"
    assert len(frames) >= 3
    assert playground.output_text() == done["text"]

    # The run's numbers: the seed actually used, timing, the reason it stopped.
    expect(playground.stat("seed")).to_contain_text(str(started["seed"]))
    expect(playground.stat("seed")).to_contain_text("random")
    # (the first run of a model in this server waited for its load: said beside it, from done.timing.load_ms)
    load = r" \(after (\d+ ms|\d+\.\d\d s) loading the model\)" if done["timing"]["load_ms"] is not None else ""
    expect(playground.stat("ttft")).to_have_text(re.compile(rf"^(\d+ ms|\d+\.\d\d s){load}$"))
    expect(playground.stat("rate")).to_contain_text("tokens/s")
    expect(playground.stat("reason")).to_have_attribute("data-reason", done["reason"])
    expect(playground.stat("reason")).to_contain_text(done["reason"])

    # The exact prompt tokens, as sent in `started`.
    chips = page.locator("#prompt-tokens li")
    assert chips.all_text_contents() == [visible_whitespace(t["text"]) for t in started["prompt_tokens"]]
    playground.shot("01-greedy-run")

    # Hover: the first token's alternatives, exactly as the websocket sent them.
    playground.tokens.first.hover()
    expect(playground.inspector).to_be_visible()
    playground.assert_inspector_matches(frames[0])
    playground.shot("02-inspector-hover")

    # Keyboard: the output is one tab stop after the tint and whitespace switches; arrow keys move between tokens.
    page.mouse.move(1, 1)
    page.get_by_role("radio", name="probability").focus()  # the tint switch: one tab stop
    page.keyboard.press("Tab")
    expect(page.get_by_label("Show spaces and newlines (· ↵)")).to_be_focused()
    page.keyboard.press("Tab")
    expect(playground.tokens.first).to_be_focused()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expect(playground.tokens.nth(2)).to_be_focused()
    expect(playground.inspector).to_have_attribute("data-index", "2")
    playground.assert_inspector_matches(frames[2])
    playground.shot("03-inspector-keyboard")
    page.keyboard.press("End")
    expect(playground.tokens.last).to_be_focused()
    playground.assert_inspector_matches(frames[-1])
    page.keyboard.press("Escape")
    expect(playground.inspector).to_be_hidden()

    # The run's numbers follow the output: one Tab on from its token, "Use this seed", then the permalink.
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Use this seed")).to_be_focused()
    if done.get("run_id"):
        page.keyboard.press("Tab")
        expect(page.get_by_role("link", name=f"/r/{done['run_id']}")).to_be_focused()

    # "Use this seed" puts the seed that was drawn into the seed field.
    page.get_by_role("button", name="Use this seed").click()
    expect(page.get_by_label("Seed", exact=True)).to_have_value(str(started["seed"]))

    # Nothing overflows sideways at 1280×800.
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def test_stop_keeps_the_partial_output(playground: PlaygroundPage) -> None:
    page = playground.page
    playground.generate("Once upon a time", temperature=1, top_p=0.95, seed=7, max_tokens=4000, min_tokens=4000)
    expect(page.get_by_role("button", name="Stop")).to_be_enabled(timeout=10_000)
    page.wait_for_function("() => document.querySelectorAll('#output .token').length >= 5", timeout=60_000)
    expect(page.locator("#status")).to_have_attribute("data-state", "streaming")  # tokens arrive one by one
    playground.shot("04-streaming")
    page.get_by_role("button", name="Stop").click()
    done = playground.wait_done()

    assert done["reason"] == "cancelled"
    frames = assert_tokens_match_frames(playground)
    assert 5 <= len(frames) < 4000
    assert done["usage"]["completion_tokens"] == len(frames)
    assert playground.output_text() == done["text"]
    expect(playground.stat("reason")).to_have_attribute("data-reason", "cancelled")
    expect(playground.stat("reason")).to_contain_text("cancelled")
    expect(page.locator("#status")).to_contain_text("cancelled")
    expect(playground.stat("seed")).to_have_text("7")
    expect(page.get_by_role("button", name="Generate")).to_be_enabled()
    expect(page.get_by_role("button", name="Stop")).to_be_disabled()
    playground.shot("05-stopped")


def test_a_server_error_appears_next_to_the_field_it_names(playground: PlaygroundPage) -> None:
    page = playground.page
    playground.generate("The capital of France is", temperature=5)
    error_message = page.locator("#temperature-error")
    expect(error_message).to_be_visible(timeout=30_000)
    error = playground.event("error")["error"]
    assert error["param"] == "params.temperature"
    # the server's words, the field named as the page labels it, not by its wire name
    shown = error["message"].replace("params.temperature", "Temperature")
    assert shown.startswith("Temperature must be")
    expect(error_message).to_have_text(shown)
    expect(page.locator("#status")).to_have_text(f"Error: {shown}")
    # Next to its control: in the same field, and the control points at it.
    field = page.locator(".field", has=page.locator("#temperature"))
    expect(field.locator(".field-error")).to_have_text(shown)
    temperature = page.get_by_label("Temperature", exact=True)
    expect(temperature).to_have_attribute("aria-invalid", "true")
    assert "temperature-error" in (temperature.get_attribute("aria-describedby") or "").split()
    expect(temperature).to_be_focused()
    assert playground.events("token") == []
    expect(page.get_by_role("button", name="Generate")).to_be_enabled()
    playground.shot("06-server-error")

    # Fixing the value clears the message and the run goes through. The largest seed (2^63 − 1,
    # beyond a JS number's exact range) travels both ways unchanged.
    playground.generate("The capital of France is", temperature=0, max_tokens=2, seed=2**63 - 1)
    playground.wait_done()
    expect(error_message).to_be_hidden()
    expect(temperature).not_to_have_attribute("aria-invalid", "true")
    assert playground.event("started")["seed"] == 2**63 - 1
    expect(playground.stat("seed")).to_have_text(str(2**63 - 1))


def test_an_html_injection_prompt_shows_as_text(playground: PlaygroundPage) -> None:
    page = playground.page
    prompt = 'Repeat this: <img src=x onerror="window.__injected=1"><b>bold</b>'
    playground.generate(prompt, temperature=0, max_tokens=16)
    done = playground.wait_done()
    started = playground.event("started")

    # The prompt tokens show the markup literally (after the completion prompt's <|endoftext|>).
    chips = page.locator("#prompt-tokens li")
    assert chips.all_text_contents() == [visible_whitespace(t["text"]) for t in started["prompt_tokens"]]
    assert "".join(chips.all_text_contents()).endswith(prompt)
    expect(page.locator("#prompt-tokens")).to_contain_text('<img src=x onerror="window.__injected=1">')
    assert page.locator("img").count() == 0
    assert page.locator("#main b").count() == 0
    assert page.locator("#prompt-tokens *").count() == chips.count()  # chips hold text only
    assert page.locator("#output *").count() == page.locator("#output .token, #output .tail").count()
    assert page.evaluate("window.__injected") is None
    assert_tokens_match_frames(playground)
    assert playground.output_text() == done["text"]
    playground.shot("07-html-injection")


def test_chat_mode_at_phone_width(playground: PlaygroundPage) -> None:
    page = playground.page
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_label("Chat", exact=True).check()
    playground.generate("What is the capital of France?", temperature=0, max_tokens=6)
    playground.wait_done()
    started = playground.event("started")
    assert started["mode"] == "chat"
    # The chat template's special tokens are shown, and marked as special.
    specials = [t["text"] for t in started["prompt_tokens"] if t["text"].startswith("<|")]
    assert "<|im_start|>" in specials
    assert page.locator("#prompt-tokens li.special").all_text_contents() == specials
    frames = assert_tokens_match_frames(playground)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    playground.tokens.first.click()  # a tap: the inspector docks at the bottom of the screen
    expect(playground.inspector).to_be_visible()
    playground.assert_inspector_matches(frames[0])
    box = playground.inspector.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    expect(playground.tokens.first).to_be_in_viewport()
    page.screenshot(path=str(playground.artifacts / "08-phone-chat.png"))
    page.get_by_role("button", name="Close alternatives").click()
    expect(playground.inspector).to_be_hidden()
