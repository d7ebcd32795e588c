"""Several models on the page, end to end: a real daphne serving SmolLM2-135M-Instruct and Gemma 3
270M (both built in .models/), Debian's Chromium.

The picker lists both with their kind and license; choosing Gemma tokenizes with Gemma's tokenizer
(its <bos> and ids), generates with Gemma and switches chat mode off with the server's reason; the
model rides along through the address, the saved run, /history and "Open in playground"; the live
comparison's "Base vs instruct" asks both models one question, greedily with one seed (the instruct
model answers it, the base model writes more questions), aligns them on the text, marks where they
part and shows how each model rated the other's token there.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from inference.model_catalog import CATALOG
from tests.e2e.playground_page import PlaygroundPage, page_errors

pytestmark = pytest.mark.e2e

GEMMA = "gemma-3-270m"
SMOLLM = "smollm2-135m-instruct"
GEMMA_NAME = CATALOG[GEMMA].display_name  # the one name pages show (inference/model_catalog.py)


def choose(playground: PlaygroundPage, model: str) -> None:
    playground.page.get_by_label("Model", exact=True).select_option(model)


def test_the_picker_names_each_model_with_its_kind_variant_and_license(playground: PlaygroundPage):
    page = playground.page
    picker = page.get_by_label("Model", exact=True)
    expect(picker.locator("option")).to_have_count(2)
    assert picker.locator("option").evaluate_all("os => os.map((o) => o.value)") == [SMOLLM, GEMMA]
    expect(picker).to_have_value(SMOLLM)  # the default
    facts = page.locator("#model-facts")
    expect(facts.locator("[data-model-kind]")).to_have_attribute("data-model-kind", "instruct")
    expect(facts.locator("[data-model-license]")).to_have_text("Apache-2.0")
    expect(facts.locator("[data-model-variant]")).to_contain_text("exact")
    kernels = re.compile(r"^Computed by (our kernels \(\w[\w ]*\)|ONNX Runtime MatMulNBits)\.\s*$")
    expect(facts.locator("[data-model-kernels]")).to_have_text(kernels)  # which kernels serve, the server's words

    choose(playground, GEMMA)
    expect(facts.locator("[data-model-kind]")).to_have_attribute("data-model-kind", "base")
    license_link = facts.locator("[data-model-license]")
    expect(license_link).to_have_text("Gemma Terms of Use")
    expect(license_link).to_have_attribute("href", re.compile(r"^https://ai\.google\.dev/gemma/terms"))
    expect(facts).to_contain_text("262,144")


def test_gemma_tokenizes_generates_and_has_no_chat_mode(playground: PlaygroundPage):
    page = playground.page
    chips = page.locator("#prompt-tokens .chip")
    expect(chips.first).to_have_text("<|endoftext|>")  # SmolLM's document start, tokenized live
    page.get_by_label("Chat", exact=True).check()

    choose(playground, GEMMA)
    chat = page.get_by_label("Chat", exact=True)
    expect(chat).to_be_disabled()
    expect(page.get_by_label("Completion", exact=True)).to_be_checked()  # moved out of chat, saying why
    reason = page.locator("#mode-chat-unavailable")
    expect(reason).to_be_visible()
    expect(reason).to_contain_text("base model: it has no chat template")
    expect(page.locator("#status")).to_contain_text("no chat template")
    # the prompt tokenized again, by Gemma's tokenizer: its own document start and ids (the first
    # request to Gemma may wait for the worker to load it)
    expect(chips.first).to_have_text("<bos>", timeout=120_000)
    expect(chips.first).to_have_attribute("data-id", "2")
    assert "model=gemma-3-270m" in page.url
    tokenizes = playground.sent_of("tokenize")
    assert tokenizes[-1]["model"] == GEMMA

    done = playground.run("The capital of France is", temperature=0, max_tokens=6)
    generate = playground.sent_of("generate")[-1]
    assert generate["model"] == GEMMA
    started = playground.event("started")
    assert started["model"]["id"] == GEMMA
    assert started["prompt_tokens"][0] == {"id": 2, "text": "<bos>"}
    # one name per model, the catalogue's, as the picker shows it (it said "gemma-3-270m on …",
    # the manifest's name, beside "SmolLM2-135M-Instruct on …")
    expect(playground.stat("model")).to_contain_text(f"{GEMMA_NAME} on ")
    shown = playground.tokens.evaluate_all("ts => ts.map((t) => t.textContent)")
    assert "".join(shown) == done["text"]

    choose(playground, SMOLLM)
    expect(chat).to_be_enabled()
    expect(reason).to_be_hidden()
    expect(chips.first).to_have_text("<|endoftext|>")


def test_the_model_survives_save_history_and_open_in_playground(playground: PlaygroundPage, page: Page):
    choose(playground, GEMMA)
    done = playground.run("The capital of France is", temperature=0, max_tokens=4)
    run_id = done["run_id"]

    page.goto(f"{playground.base_url}/r/{run_id}")
    expect(page.locator("[data-stat=model]")).to_contain_text(f"{GEMMA_NAME} on ")

    page.goto(f"{playground.base_url}/history")
    expect(page.locator(f"tr[data-run-id='{run_id}'] td.model")).to_have_text(GEMMA_NAME)

    page.goto(f"{playground.base_url}/r/{run_id}")
    page.get_by_role("link", name="Open in playground").click()
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.get_by_label("Model", exact=True)).to_have_value(GEMMA)
    expect(page.get_by_label("Chat", exact=True)).to_be_disabled()
    expect(page.locator("#prompt-tokens .chip").first).to_have_text("<bos>")


def test_base_vs_instruct_side_by_side_marks_where_they_part_and_rates_across(page: Page, daphne_server, artifacts):
    errors = page_errors(page)
    sent: list[dict] = []
    received: list[dict] = []
    page.on(
        "websocket",
        lambda socket: (
            socket.on("framesent", lambda payload: sent.append(json.loads(payload))),
            socket.on("framereceived", lambda payload: received.append(json.loads(payload))),
        ),
    )
    page.goto(daphne_server.url + "/compare/live")
    expect(page.locator("#c1-model option")).to_have_count(2)
    page.get_by_label("Seed", exact=True).fill("5")  # the preset's own fixed seed replaces it
    page.get_by_role("button", name="Base vs instruct").click()

    expect(page.get_by_test_id("comparison-link")).to_be_visible(timeout=180_000)
    expect(page.get_by_label("Prompt", exact=True)).to_have_value("Who wrote Romeo and Juliet?")
    assert "c1.model=smollm2-135m-instruct" in page.url and "c2.model=gemma-3-270m" in page.url
    heads = page.locator("[data-testid=live-aligned] thead th")
    expect(heads.nth(1)).to_contain_text("SmolLM2")
    expect(heads.nth(2)).to_contain_text("Gemma")

    # what the preset claims: greedy, one fixed seed; the instruct model answers, the base model
    # goes on with the text (more questions)
    generates = [f for f in sent if f.get("type") == "generate"]
    assert [g["params"]["temperature"] for g in generates] == [0, 0]
    assert generates[0]["params"]["seed"] == generates[1]["params"]["seed"] != 5
    dones = {f["request_id"]: f for f in received if f.get("type") == "done"}
    instruct, base = (dones[g["request_id"]]["text"] for g in generates)
    assert "Shakespeare" in instruct, instruct
    assert "Shakespeare" not in base and "?" in base, base

    cross = page.locator("[data-cross-model]")
    expect(cross).to_be_visible()
    divergence = page.get_by_test_id("cross-divergence")
    expect(divergence).to_contain_text("The texts part at character")
    first = cross.locator("tbody tr.first-divergence")
    expect(first).to_have_count(1)
    ratings = page.get_by_test_id("cross-rating").locator("li")
    expect(ratings).to_have_count(2, timeout=60_000)
    texts = ratings.all_inner_texts()
    assert re.search(r"gave .*'s .* p = ", texts[0]) or "stopped here" in texts[0], texts
    assert re.search(r"gave .*'s .* p = ", texts[1]) or "stopped here" in texts[1], texts
    assert any(" p = " in t for t in texts), texts
    page.screenshot(path=str(artifacts / "base-vs-instruct.png"), full_page=True)

    # the saved comparison draws the same alignment and ratings
    said = divergence.text_content()
    page.get_by_test_id("comparison-link").click()
    page.wait_for_url("**/compare/*")
    expect(page.get_by_test_id("cross-divergence")).to_have_text(said)
    expect(page.get_by_test_id("cross-rating").locator("li")).to_have_text(texts, timeout=60_000)
    assert errors == []
