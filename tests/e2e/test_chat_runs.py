"""A saved multi-turn chat run keeps its whole conversation, end to end (real daphne, real model,
Chromium): made on the page with two user turns and an answer to continue, its permalink shows
every turn and its Replay sends the same conversation ("identical"); "Open in playground" brings
the turns and the answer's start back on the page, and generating there with the same seed gives
the same tokens."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage, page_errors

pytestmark = pytest.mark.e2e

SYSTEM = "You answer in one short sentence."
CONVERSATION = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "Paris is the capital of France."},
    {"role": "user", "content": "And of Italy?"},
    {"role": "assistant", "content": "The capital of Italy is"},
]


def fill_conversation(playground: PlaygroundPage) -> None:
    page = playground.page
    page.get_by_label("Chat", exact=True).check()
    page.get_by_label("System message", exact=True).fill(SYSTEM)
    page.get_by_role("button", name="Add a turn").click()
    page.get_by_label("Turn 1: text", exact=True).fill(CONVERSATION[1]["content"])
    page.get_by_role("button", name="Add a turn").click()
    page.get_by_label("Turn 2: text", exact=True).fill(CONVERSATION[2]["content"])
    page.get_by_label("The answer starts with", exact=True).fill(CONVERSATION[4]["content"])
    page.get_by_label("Prompt", exact=True).fill(CONVERSATION[3]["content"])


def test_a_saved_multi_turn_run_keeps_its_turns_through_permalink_replay_and_playground(playground, daphne_server):
    page = playground.page
    fill_conversation(playground)
    done = playground.run(temperature=0.8, seed=4242, max_tokens=8)
    sent = playground.sent_of("generate")[-1]
    assert sent["messages"] == CONVERSATION and sent["continue_final_message"] is True
    run_id = done["run_id"]
    assert run_id, done
    tokens = [event["id"] for event in playground.events("token")]

    # The page's own address keeps the turns and the answer's start: a reload restores them.
    page.wait_for_function("() => location.search.includes('turns=') && location.search.includes('assistant_prefix=')")
    page.reload()
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.get_by_label("Turn 2: text", exact=True)).to_have_value(CONVERSATION[2]["content"])
    expect(page.get_by_label("The answer starts with", exact=True)).to_have_value(CONVERSATION[4]["content"])

    # The history lists it by its last user message, with its number of messages.
    errors = page_errors(page)
    page.goto(f"{daphne_server.url}/history")
    expect(page.get_by_test_id("history").locator("tbody tr").filter(has_text="And of Italy?")).to_contain_text("(5 messages)")

    # The permalink shows every turn, as text.
    page.goto(f"{daphne_server.url}/r/{run_id}")
    turns = page.get_by_test_id("conversation").locator("li")
    expect(turns).to_have_count(len(CONVERSATION))
    for turn, message in zip(turns.all(), CONVERSATION):
        assert turn.get_attribute("data-role") == message["role"]
        assert turn.locator("pre").text_content() == message["content"]
    expect(turns.last).to_contain_text("continued by the model")
    playground.shot("31-chat-run-permalink")
    exported = page.request.get(f"{daphne_server.url}/r/{run_id}.json").json()["run"]["request"]
    assert exported["messages"] == CONVERSATION and exported["continue_final_message"] is True

    # Replay sends the same conversation, and the tokens come out the same.
    page.get_by_role("button", name="Replay").click()
    expect(page.get_by_test_id("replay-result")).to_have_text("Replay: identical. Compare with the replay", timeout=90_000)
    page.get_by_role("link", name="Compare with the replay").click()
    expect(page.get_by_test_id("first-divergence")).to_contain_text("The runs chose the same token at every position")
    compared = page.locator(".compared-conversations [data-testid=conversation]")
    expect(compared).to_have_count(2)
    expect(compared.first.locator("li").nth(3)).to_have_text(re.compile("And of Italy\\?"))

    # "Run these settings again, live" runs the same conversation in every column.
    page.get_by_role("link", name="Run these settings again, live").click()
    expect(page.locator("[data-live-turns] li")).to_have_count(2)
    expect(page.locator("#live-assistant_prefix")).to_have_value(CONVERSATION[4]["content"])
    sent_before = len(playground.sent_of("generate"))
    page.get_by_role("button", name="Run side by side").click()
    expect(page.get_by_test_id("comparison-link")).to_be_visible(timeout=90_000)
    playground.shot("32-chat-run-live-compare")
    live = playground.sent_of("generate")[sent_before:]
    assert len(live) == 2 and all(f["messages"] == CONVERSATION and f["continue_final_message"] for f in live)
    page.get_by_test_id("comparison-link").click()  # the same settings and seed: the same tokens
    expect(page.get_by_test_id("first-divergence")).to_contain_text("The runs chose the same token at every position")
    assert errors == []

    # Open in playground: the turns and the answer's start are back, and the same seed gives the same run.
    page.goto(f"{daphne_server.url}/r/{run_id}")
    page.get_by_role("link", name="Open in playground").click()
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.get_by_label("Chat", exact=True)).to_be_checked()
    expect(page.get_by_label("System message", exact=True)).to_have_value(SYSTEM)
    expect(page.get_by_label("Turn 1: role", exact=True)).to_have_value("user")
    expect(page.get_by_label("Turn 1: text", exact=True)).to_have_value(CONVERSATION[1]["content"])
    expect(page.get_by_label("Turn 2: role", exact=True)).to_have_value("assistant")
    expect(page.get_by_label("Turn 2: text", exact=True)).to_have_value(CONVERSATION[2]["content"])
    expect(page.get_by_label("Prompt", exact=True)).to_have_value(CONVERSATION[3]["content"])
    expect(page.get_by_label("The answer starts with", exact=True)).to_have_value(CONVERSATION[4]["content"])
    playground.shot("30-chat-run-reopened")
    playground.run()
    again = playground.sent_of("generate")[-1]
    assert again["messages"] == CONVERSATION and again["continue_final_message"] is True
    assert [event["id"] for event in playground.events("token")] == tokens
