"""Every model's special (control) tokens are labelled the same way on the page (issue 30: Gemma
printed <start_of_image> literally, unlabelled, while SmolLM2's end token was labelled), and a run
that waited for its model to load says so beside its time to first token. A real daphne serving
both models, the real Gemma, Debian's Chromium."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage

pytestmark = pytest.mark.e2e

GEMMA = "gemma-3-270m"
CASES = [  # a special token in the middle of the text: Gemma's image marker (its GGUF types it user-defined, the
    # catalogue labels it) and SmolLM2's turn opener, each the greedy pick made certain by a logit bias
    pytest.param(GEMMA, 255999, "<start_of_image>", marks=pytest.mark.gemma_model, id="gemma"),
    pytest.param("smollm2-135m-instruct", 1, "<|im_start|>", marks=pytest.mark.real_model, id="smollm2"),
]


@pytest.mark.parametrize(("model", "token_id", "text"), CASES)
def test_a_special_token_is_labelled_as_the_end_token_is(playground: PlaygroundPage, model, token_id, text) -> None:
    page = playground.page
    bias = json.dumps([[token_id, 100, text]])
    prompt = quote(f"A picture: {text}")  # the prompt holds the special token too: its chip is marked by id
    page.goto(f"{playground.base_url}/?model={model}&prompt={prompt}&temperature=0&max_tokens=2&logit_bias={quote(bias)}")
    page.locator("#connection[data-connected=true]").wait_for()
    playground.frames.clear()
    page.get_by_role("button", name="Generate").click()
    done = playground.wait_done(timeout_ms=180_000)
    first = playground.events("token")[0]
    assert (first["id"], first["token"], first["text"]) == (token_id, text, text)
    token = playground.tokens.nth(0)
    expect(token).to_have_class(re.compile(r"\bspecial\b"))
    expect(token).to_have_attribute("data-name", text)
    expect(token).to_have_attribute("aria-label", f"special token ({text})")
    assert token.evaluate("el => getComputedStyle(el, '::after').content") == f'"special · {text}"'
    assert token.evaluate("el => el.textContent") == text  # copied text stays the model's
    assert token_id in [t["id"] for t in playground.event("started")["prompt_tokens"]]
    expect(page.locator(f"#prompt-tokens .chip[data-id='{token_id}']").first).to_have_class("chip special")

    # The load, when this run waited for it, is said while it lasts and beside the time to first token.
    timing = done["timing"]
    loading = playground.events("loading")
    ttft = playground.stat("ttft")
    if loading:
        assert loading[0]["model"] == model and timing["load_ms"] > 0
        expect(ttft).to_contain_text("loading the model")
    else:  # the model was in memory already (an earlier test used it)
        assert timing["load_ms"] is None
        expect(ttft).not_to_contain_text("loading")
