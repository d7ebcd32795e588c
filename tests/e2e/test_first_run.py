"""A newcomer's first minutes on the playground: the page opens with a worked example that
Generate runs as it is; an instruction typed in completion mode is noticed and chat mode is one
click away; an empty or odd result says why it ended and what to try."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage

pytestmark = pytest.mark.e2e


def test_generate_on_a_fresh_page_streams_the_worked_example(playground: PlaygroundPage):
    prompt = playground.page.get_by_label("Prompt", exact=True)
    example = prompt.input_value()
    assert example.strip(), "the prompt field holds a real prompt, not a placeholder"
    playground.page.get_by_role("button", name="Generate").click()
    done = playground.wait_done()
    generate = playground.sent_of("generate")[-1]
    assert generate["prompt"] == example and generate["mode"] == "completion"
    tokens = playground.events("token")
    assert tokens and done["usage"]["completion_tokens"] == len(tokens)
    expect(playground.tokens).to_have_count(len(tokens))
    assert "?" not in playground.page.url, "the example is the page's starting state: the address stays bare"


def test_an_instruction_in_completion_mode_suggests_chat_with_one_click(playground: PlaygroundPage):
    page = playground.page
    suggestion = page.locator("[data-mode-suggestion]")
    expect(suggestion).to_be_hidden()  # the example continues text: nothing to suggest
    page.get_by_label("Prompt", exact=True).fill("Write a haiku about the sea.")
    expect(suggestion).to_be_visible()
    expect(suggestion).to_contain_text("instruction")
    suggestion.get_by_role("button", name="Switch to chat").click()
    expect(page.get_by_label("Chat")).to_be_checked()
    expect(page.get_by_label("Chat")).to_be_focused()
    expect(suggestion).to_be_hidden()
    playground.page.get_by_role("button", name="Generate").click()
    playground.wait_done()
    assert playground.sent_of("generate")[-1]["mode"] == "chat"
    page.get_by_label("Completion").check()
    expect(suggestion).to_be_visible()  # back in completion mode, the instruction is noticed again


def test_a_run_that_writes_nothing_says_why_and_what_to_try(playground: PlaygroundPage):
    # A stop string every continuation starts with ends the run before any text: nothing written.
    done = playground.run("The capital of France is", max_tokens=8, stop=" ", seed=1, temperature=0)
    assert done["reason"] == "stop" and done["text"] == ""
    advice = playground.page.locator("#run-advice")
    expect(advice).to_be_visible()
    expect(advice).to_contain_text("A stop string (“ ”) appeared")
    expect(advice).to_contain_text("remove or change the stop strings")


def test_an_instruction_continued_in_completion_mode_points_to_chat(playground: PlaygroundPage):
    done = playground.run("Write a haiku about the sea.", max_tokens=24, seed=1)
    assert done["reason"] in {"eos", "max_tokens", "stop"}
    advice = playground.page.locator("#run-advice")
    expect(advice).to_be_visible()
    expect(advice).to_contain_text("Chat mode answers it")
