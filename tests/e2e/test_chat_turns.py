"""Chat mode with several turns and an answer to continue: the page sends `messages`, the server
renders them with the model's chat template, and the live token view shows exactly what is fed."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage


def test_earlier_turns_and_an_answer_start_are_rendered_by_the_chat_template(playground: PlaygroundPage) -> None:
    page = playground.page
    page.get_by_label("Chat", exact=True).check()
    page.get_by_label("System message", exact=True).fill("You answer in one word.")
    page.get_by_role("button", name="Add a turn").click()
    page.get_by_label("Turn 1: text", exact=True).fill("Capital of France?")
    page.get_by_role("button", name="Add a turn").click()
    expect(page.get_by_label("Turn 2: role", exact=True)).to_have_value("assistant")
    page.get_by_label("Turn 2: text", exact=True).fill("Paris.")
    page.get_by_label("The answer starts with", exact=True).fill("The capital of Italy is")
    page.get_by_label("Prompt", exact=True).fill("And of Italy?")
    page.wait_for_function(
        "() => document.querySelector('#prompt-tokens').textContent.includes('capital of Italy is')", timeout=10_000
    )
    live = playground.request_frames("tokenize")[-1]

    playground.run(temperature=0, max_tokens=3)
    sent = playground.sent_of("generate")[-1]
    assert "prompt" not in sent and "system" not in sent
    assert sent["messages"] == [
        {"role": "system", "content": "You answer in one word."},
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "And of Italy?"},
        {"role": "assistant", "content": "The capital of Italy is"},
    ]
    assert sent["continue_final_message"] is True
    started = playground.event("started")
    fed = "".join(t["text"] for t in started["prompt_tokens"])
    assert fed == (
        "<|im_start|>system\nYou answer in one word.<|im_end|>\n<|im_start|>user\nCapital of France?<|im_end|>\n"
        "<|im_start|>assistant\nParis.<|im_end|>\n<|im_start|>user\nAnd of Italy?<|im_end|>\n"
        "<|im_start|>assistant\nThe capital of Italy is"
    )
    assert [t["id"] for t in started["prompt_tokens"]] == [t["id"] for t in live["tokens"]]
    playground.shot("20-chat-turns")

    # Without turns or an answer start, chat mode sends the one-turn frame as before.
    page.get_by_role("button", name="Remove turn 1").click()
    page.get_by_role("button", name="Remove turn 1").click()
    page.get_by_label("The answer starts with", exact=True).fill("")
    playground.run(temperature=0, max_tokens=1)
    sent = playground.sent_of("generate")[-1]
    assert (sent["prompt"], sent["system"], sent["mode"]) == ("And of Italy?", "You answer in one word.", "chat")
    assert "messages" not in sent
