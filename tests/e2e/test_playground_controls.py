"""The playground's controls: every parameter, presets, stage order, logit bias, the live token
sequence and settings in the URL, against a real daphne and Debian's Chromium.

What the page sends is read from its own websocket (`framesent`) and what the server answered
from `framereceived`, so each check compares the page with the wire.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Locator, expect

from playground.edge.param_facts import params_schema
from tests.e2e.playground_page import PlaygroundPage, visible_whitespace

pytestmark = pytest.mark.e2e

# Every parameter the server knows (its facts, /api/params.schema.json) but those with their own
# editors (logit bias, stage order) and the grammar (no editor on the page yet: docs/sampling.md).
ALL_PARAMS = [key for key in params_schema()["properties"] if key not in ("logit_bias", "sampler_order", "grammar")]


def test_every_parameter_has_a_labelled_control_with_range_and_off_value(playground: PlaygroundPage) -> None:
    page = playground.page
    for key in ALL_PARAMS:
        field = page.locator(f".field[data-param={key}]")
        expect(field).to_have_count(1)
        control = field.locator("input, select, textarea").first
        control_id = control.get_attribute("id")
        assert control_id == key.replace("_", "-")
        # A label names it, and its hint (explanation, range, off value) describes it.
        assert page.locator(f"label[for={control_id}]").count() == 1
        hint = field.locator(".hint")
        assert f"{control_id}-hint" in control.get_attribute("aria-describedby").split()
        assert hint.locator(".about").text_content().strip() != ""
        expect(hint.locator(".range")).to_contain_text(re.compile(r"^Range .+; off: .+\.$"))
    groups = page.locator("details.param-group > summary").all_text_contents()
    for title in [
        "Randomness",
        "Truncation",
        "Penalties",
        "Length and stopping",
        "Several answers and search",
        "Logit bias",
        "Stage order",
    ]:
        assert any(group == title or group.startswith(f"{title} (") for group in groups)  # closed ones count their dials

    # Every group opens from the keyboard (a <details> summary is a button).
    penalties = page.locator("details.param-group[data-group=penalties]")
    expect(penalties).not_to_have_attribute("open", "")
    penalties.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(penalties).to_have_attribute("open", "")
    expect(page.get_by_label("DRY multiplier", exact=True)).to_be_visible()

    # Non-default values reach the server exactly, and come back normalized in `started.params`.
    playground.set(**{"Repetition penalty": 1.3, "Top-k": 40, "Min-p": 0.02, "No-repeat n-gram size": 3})
    playground.set(stop="\\n\\n\nEND")  # in a closed group
    done = playground.run("The capital of France is", temperature=0.9, seed=5, max_tokens=4)
    sent = playground.sent_of("generate")[-1]["params"]
    assert sent["repetition_penalty"] == 1.3 and sent["top_k"] == 40 and sent["min_p"] == 0.02
    assert sent["no_repeat_ngram_size"] == 3 and sent["stop"] == ["\n\n", "END"]
    assert "dry_multiplier" not in sent  # off values are left to the server's defaults
    started = playground.event("started")["params"]
    assert started["repetition_penalty"] == 1.3 and started["top_k"] == 40 and started["stop"] == ["\n\n", "END"]
    stages = [s["name"] for s in playground.events("token")[0]["stages"]]
    assert stages == ["repetition_penalty", "no_repeat_ngram", "temperature", "top_k", "min_p"]
    assert done["usage"]["completion_tokens"] >= 1
    playground.shot("10-all-controls")


def test_presets_set_the_dials_and_user_presets_survive_a_reload(playground: PlaygroundPage) -> None:
    page = playground.page
    temperature = page.get_by_label("Temperature", exact=True)
    top_p = page.get_by_label("Top-p", exact=True)
    min_p = page.get_by_label("Min-p", exact=True)
    expected = {
        "Greedy": ("0", "1", "0"),
        "Precise": ("0.2", "1", "0"),
        "Balanced": ("0.7", "0.9", "0"),
        "Creative": ("1", "0.95", "0"),
        "Wild": ("1.5", "1", "0.05"),
    }
    page.get_by_label("Top-k", exact=True).fill("12")
    page.get_by_label("Seed", exact=True).fill("99")
    for name, (t, p, m) in expected.items():
        button = page.locator(f"button[data-preset={name}]")
        button.click()
        expect(temperature).to_have_value(t)
        expect(top_p).to_have_value(p)
        expect(min_p).to_have_value(m)
        expect(page.get_by_label("Top-k", exact=True)).to_have_value("0")  # the truncation dials reset
        expect(page.get_by_label("Seed", exact=True)).to_have_value("99")  # the seed is kept
        expect(button).to_have_attribute("aria-pressed", "true")
        assert page.locator("button[data-preset][aria-pressed=true]").count() == 1

    # Balanced reaches the server as T 0.7, top-p 0.9.
    page.locator("button[data-preset=Balanced]").click()
    playground.run("Once upon a time", max_tokens=2)
    started = playground.event("started")["params"]
    assert (started["temperature"], started["top_p"], started["seed"]) == (0.7, 0.9, 99)

    # A named preset of my own, kept in the browser across a reload.
    temperature.fill("0.33")
    page.get_by_label("Top-k", exact=True).fill("7")
    page.get_by_label("Save current settings as", exact=True).fill("my careful one")
    page.get_by_role("button", name="Save preset").click()
    expect(page.locator("#status")).to_contain_text("saved")
    page.goto(playground.base_url + "/")
    playground.page.locator("#connection[data-connected=true]").wait_for()
    expect(page.locator("#user-preset option")).to_have_text(["my careful one"])
    expect(temperature).to_have_value("0.7")
    page.get_by_role("button", name="Load").click()
    expect(temperature).to_have_value("0.33")
    expect(page.get_by_label("Top-k", exact=True)).to_have_value("7")
    assert page.locator("button[data-preset][aria-pressed=true]").count() == 0
    page.get_by_role("button", name="Delete").click()
    expect(page.locator("#user-preset option")).to_have_text(["none saved yet"])
    playground.shot("11-presets")


def test_stage_order_by_keyboard_and_drag_reaches_the_chain(playground: PlaygroundPage) -> None:
    page = playground.page
    playground.open_group("Stage order")
    items = page.locator("#stage-order li")
    names = lambda: items.evaluate_all("els => els.map(el => el.dataset.stage)")  # noqa: E731
    default = names()
    assert default.index("temperature") < default.index("top_p")

    # Keyboard: Alt+↓ moves temperature below top_k, top_p and min_p; the move is announced.
    page.locator("#stage-order li[data-stage=temperature]").focus()
    for _ in range(4):
        page.keyboard.press("Alt+ArrowDown")
    order = names()
    assert order.index("temperature") == default.index("temperature") + 4
    assert order[order.index("temperature") - 1] == "min_p"
    expect(page.locator("#stage-order li[data-stage=temperature]")).to_be_focused()
    expect(page.locator("[data-order-announcer]")).to_have_text(
        f"temperature moved to position {order.index('temperature') + 1} of {len(order)}."
    )

    # Drag: top_p dropped on the upper half of top_k goes before it.
    page.locator("#stage-order li[data-stage=top_p]").drag_to(
        page.locator("#stage-order li[data-stage=top_k]"), target_position={"x": 20, "y": 3}
    )
    order = names()
    assert order.index("top_p") == order.index("top_k") - 1

    # Stages the settings use are marked on.
    playground.set(top_p=0.6, temperature=2)
    expect(page.locator("#stage-order li[data-stage=top_p]")).to_have_class(re.compile(r"\bon\b"))
    expect(page.locator("#stage-order li[data-stage=top_p] .stage-state")).to_have_text("on")
    expect(page.locator("#stage-order li[data-stage=min_p] .stage-state")).to_have_text("off")
    playground.shot("12-stage-order")

    playground.run("The capital of France is", seed=1, max_tokens=2)
    sent = playground.sent_of("generate")[-1]["params"]
    assert sent["sampler_order"] == order
    assert playground.event("started")["params"]["sampler_order"] == order
    # The chain ran in that order: top_p before temperature.
    stages = [s["name"] for s in playground.events("token")[0]["stages"]]
    assert stages == ["top_p", "temperature"]

    page.get_by_role("button", name="Default order").click()
    assert names() == default


def test_stages_marked_on_are_the_stages_the_server_runs(playground: PlaygroundPage) -> None:
    """The stage list follows the server's rule: T = 1 changes nothing, so temperature is no stage;
    T = 0 is greedy, so no stage after temperature runs. Each time the page's "on" stages are the
    stages the server's trace reports for the run's tokens."""
    page = playground.page
    playground.open_group("Stage order")

    def marked_on() -> list[str]:
        return page.locator("#stage-order li.on").evaluate_all("els => els.map(el => el.dataset.stage)")

    def state(stage: str) -> Locator:
        return page.locator(f"#stage-order li[data-stage={stage}] .stage-state")

    # A fresh page: T 0.7 is a stage, nothing else.
    expect(state("temperature")).to_have_text("on")
    assert marked_on() == ["temperature"]

    playground.set(temperature=1, top_p=0.9)
    expect(state("temperature")).to_have_text("off")
    expect(state("top_p")).to_have_text("on")
    assert marked_on() == ["top_p"]
    playground.run("The capital of France is", seed=3, max_tokens=2)
    assert [s["name"] for s in playground.events("token")[0]["stages"]] == marked_on() == ["top_p"]

    playground.set(**{"temperature": 0, "top_k": 5, "Repetition penalty": 1.2})
    expect(state("top_k")).to_have_text("off")
    expect(state("top_p")).to_have_text("off")
    expect(state("temperature")).to_have_text("on")
    assert marked_on() == ["repetition_penalty", "temperature"]
    playground.shot("12b-stage-order-greedy")
    playground.run()
    assert [s["name"] for s in playground.events("token")[0]["stages"]] == marked_on()

    # Temperature moved last: greedy now ends the chain after top-k and top-p.
    page.locator("#stage-order li[data-stage=temperature]").focus()
    for _ in range(9):
        page.keyboard.press("Alt+ArrowDown")
    expect(state("top_k")).to_have_text("on")
    assert marked_on() == ["repetition_penalty", "top_k", "top_p", "temperature"]
    playground.run()
    assert [s["name"] for s in playground.events("token")[0]["stages"]] == marked_on()


def test_logit_bias_editor_turns_words_into_tokens(playground: PlaygroundPage) -> None:
    page = playground.page
    greedy = playground.run("The capital of France is", temperature=0, max_tokens=3)
    assert greedy["text"].startswith(" Paris")
    paris_id = playground.events("token")[0]["id"]

    playground.open_group("Logit bias")
    page.get_by_label("Bias", exact=True).fill("-100")
    page.get_by_label("Words to bias", exact=True).fill(" Paris")
    page.keyboard.press("Enter")
    entry = page.locator("[data-bias-list] li")
    expect(entry).to_have_count(1)
    tokenized = playground.request_frames("tokenize")[-1]
    assert playground.sent_of("tokenize")[-1]["mode"] == "plain"
    assert [t["id"] for t in tokenized["tokens"]] == [paris_id]
    expect(entry).to_have_attribute("data-id", str(paris_id))
    expect(entry.locator(".token-text")).to_have_text('" Paris"')
    expect(page.locator("[data-bias-preview]")).to_contain_text(f'" Paris" → 1 token: " Paris" ({paris_id})')

    # Two words become several tokens, each listed with its bias.
    page.get_by_label("Bias", exact=True).fill("2.5")
    page.get_by_label("Words to bias", exact=True).fill("Lyon Marseille")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.locator("[data-bias-preview]")).to_contain_text('"Lyon Marseille" →')
    many = playground.request_frames("tokenize")[-1]["tokens"]
    assert len(many) >= 2
    expect(entry).to_have_count(1 + len({t["id"] for t in many} - {paris_id}))
    playground.shot("13-logit-bias")
    for token in many:
        page.get_by_role("button", name=f"Remove the bias for {json.dumps(token['text'])}").click()
    expect(entry).to_have_count(1)
    expect(page.get_by_label("Words to bias", exact=True)).to_be_focused()  # removing gives the field the focus back

    done = playground.run()
    sent = playground.sent_of("generate")[-1]["params"]
    assert sent["logit_bias"] == {str(paris_id): -100}
    first = playground.events("token")[0]
    assert first["id"] != paris_id and not done["text"].startswith(" Paris")
    assert first["stages"][0]["name"] == "logit_bias"
    # The model still ranks " Paris" first (raw), but it was sampled with probability 0.
    paris = next(a for a in first["alternatives"] if a["id"] == paris_id)
    assert paris["prob"] == 0


def test_the_exact_token_sequence_updates_as_you_type(playground: PlaygroundPage) -> None:
    page = playground.page
    chips = page.locator("#prompt-tokens li")
    count = page.locator("#prompt-token-count")
    page.get_by_label("Prompt", exact=True).fill("Hello world")
    expect(count).to_contain_text("context window", timeout=10_000)
    answer = playground.request_frames("tokenize")[-1]
    assert playground.sent_of("tokenize")[-1]["mode"] == "completion"
    assert chips.all_text_contents() == [visible_whitespace(t["text"]) for t in answer["tokens"]]
    assert chips.first.text_content() == "<|endoftext|>"
    expect(count).to_contain_text(f"{answer['count']} tokens of the {answer['context_window']}-token context window")

    page.get_by_label("Chat", exact=True).check()
    expect(page.get_by_label("System message", exact=True)).to_be_visible()
    page.get_by_label("System message", exact=True).fill("Be brief.")
    expect(page.locator("#prompt-tokens li.special").first).to_have_text("<|im_start|>")
    page.wait_for_function("() => document.querySelector('#prompt-tokens').textContent.includes('Be brief.')", timeout=10_000)
    live = playground.request_frames("tokenize")[-1]
    last = playground.sent_of("tokenize")[-1]
    assert (last["mode"], last["system"]) == ("chat", "Be brief.")

    # They are exactly the ids the run is fed.
    playground.run(temperature=0, max_tokens=1)
    started = playground.event("started")
    assert [t["id"] for t in started["prompt_tokens"]] == [t["id"] for t in live["tokens"]]
    assert playground.sent_of("generate")[-1]["system"] == "Be brief."
    playground.shot("14-live-prompt-tokens")


def test_settings_round_trip_through_the_url(playground: PlaygroundPage) -> None:
    page = playground.page
    big_seed = str(2**63 - 1)
    page.get_by_label("Prompt", exact=True).fill("Line one\nLine <two> & 'three'")
    page.get_by_label("Chat", exact=True).check()
    page.get_by_label("System message", exact=True).fill("You are terse.")
    playground.set(temperature=0.35, top_k=7, seed=big_seed, max_tokens=9, top_n=8)
    playground.open_group("Penalties")
    page.get_by_label("Penalize the prompt's tokens too", exact=True).check()
    page.get_by_label("DRY sequence breakers", exact=True).fill("\\n\n;")
    playground.set(stop="END\n\\n\\n")  # in a closed group
    playground.open_group("Run and display")
    page.get_by_label("No KV cache", exact=True).check()
    playground.open_group("Stage order")
    page.locator("#stage-order li[data-stage=temperature]").focus()
    page.keyboard.press("Alt+ArrowUp")
    order = page.locator("#stage-order li").evaluate_all("els => els.map(el => el.dataset.stage)")
    playground.open_group("Logit bias")
    page.get_by_label("Bias", exact=True).fill("-7")
    page.get_by_label("Words to bias", exact=True).fill("#42")
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.search.includes('logit_bias')")
    page.wait_for_function("() => location.search.includes('sampler_order')")

    query = parse_qs(urlparse(page.url).query)
    assert query["temperature"] == ["0.35"] and query["seed"] == [big_seed] and query["mode"] == ["chat"]
    assert query["prompt"] == ["Line one\nLine <two> & 'three'"]
    assert "top_p" not in query  # only what differs from a fresh page

    def assert_restored() -> None:
        expect(page.get_by_label("Prompt", exact=True)).to_have_value("Line one\nLine <two> & 'three'")
        expect(page.get_by_label("Chat", exact=True)).to_be_checked()
        expect(page.get_by_label("System message", exact=True)).to_have_value("You are terse.")
        expect(page.get_by_label("Temperature", exact=True)).to_have_value("0.35")
        expect(page.get_by_label("Top-k", exact=True)).to_have_value("7")
        expect(page.get_by_label("Seed", exact=True)).to_have_value(big_seed)
        expect(page.get_by_label("Max tokens", exact=True)).to_have_value("9")
        expect(page.get_by_label("Top-N shown", exact=True)).to_have_value("8")
        expect(page.get_by_label("Penalize the prompt's tokens too", exact=True)).to_be_checked()
        expect(page.get_by_label("DRY sequence breakers", exact=True)).to_have_value("\\n\n;")
        expect(page.get_by_label("Stop strings", exact=True)).to_have_value("END\n\\n\\n")
        expect(page.get_by_label("No KV cache", exact=True)).to_be_checked()
        assert page.locator("#stage-order li").evaluate_all("els => els.map(el => el.dataset.stage)") == order
        expect(page.locator("[data-bias-list] li")).to_have_count(1)
        expect(page.get_by_label('Bias for "#42" (id 42)', exact=True)).to_have_value("-7")

    address = page.url
    page.reload()
    assert_restored()
    # A copied address opened elsewhere restores the same settings, and they are what is sent.
    other = page.context.new_page()
    second = PlaygroundPage(other, playground.base_url, playground.artifacts)
    other.goto(address)
    other.locator("#connection[data-connected=true]").wait_for()
    page = other
    assert_restored()
    other.get_by_role("button", name="Generate").click()
    second.wait_done()
    sent = second.sent_of("generate")[-1]
    assert sent["mode"] == "chat" and sent["system"] == "You are terse." and sent["use_cache"] is False
    assert sent["top_n"] == 8
    params = sent["params"]
    assert params["seed"] == 2**63 - 1 and params["temperature"] == 0.35 and params["top_k"] == 7
    assert params["stop"] == ["END", "\n\n"] and params["dry_sequence_breakers"] == ["\n", ";"]
    assert params["penalize_prompt"] is True and params["sampler_order"] == order
    assert params["logit_bias"] == {"42": -7}
    assert second.errors == []
    other.close()


def test_the_system_message_stays_in_chat_mode(playground: PlaygroundPage) -> None:
    """A system message typed in chat mode is not sent with completion mode's `tokenize` (the
    server refuses `system` outside chat mode), so the token view keeps working."""
    page = playground.page
    count = page.locator("#prompt-token-count")
    page.get_by_label("Prompt", exact=True).fill("Hello world")
    page.get_by_label("Chat", exact=True).check()
    page.get_by_label("System message", exact=True).fill("Be brief.")
    page.wait_for_function("() => document.querySelector('#prompt-tokens').textContent.includes('Be brief.')", timeout=10_000)

    sent_before = len(playground.sent_of("tokenize"))
    page.get_by_label("Completion", exact=True).check()
    expect(page.get_by_label("System message", exact=True)).to_be_hidden()
    page.wait_for_function("() => !document.querySelector('#prompt-tokens').textContent.includes('Be brief.')", timeout=10_000)
    last = playground.sent_of("tokenize")[-1]
    assert len(playground.sent_of("tokenize")) > sent_before
    assert last["mode"] == "completion" and "system" not in last
    answer = playground.request_frames("tokenize")[-1]
    assert answer["type"] == "tokens", answer
    expect(count).to_have_text(
        f"{answer['count']} tokens of the {answer['context_window']}-token context window (live, as you type)"
    )
    expect(count).not_to_contain_text("Could not tokenize")
    assert page.locator("#prompt-tokens li").all_text_contents() == [visible_whitespace(t["text"]) for t in answer["tokens"]]

    # Generating in completion mode sends no system message either.
    playground.run(temperature=0, max_tokens=1)
    assert "system" not in playground.sent_of("generate")[-1]


def test_a_seed_with_leading_zeros_is_that_number(playground: PlaygroundPage) -> None:
    """ "007" is the seed 7 (JSON numbers have no leading zeros, so it is sent as 7)."""
    page = playground.page
    playground.run("The capital of France is", temperature=1, max_tokens=3, seed="007")
    assert playground.sent_of("generate")[-1]["params"]["seed"] == 7
    assert playground.event("started")["seed"] == 7
    expect(playground.stat("seed")).to_have_text("7")
    with_seven = [t["id"] for t in playground.events("token")]
    playground.run(seed=7)
    assert [t["id"] for t in playground.events("token")] == with_seven

    # Seed text that is not a whole number is the server's to judge: its message lands on the
    # seed field (never a silent no-op).
    for text in ("-007", "7.5.1", "seven"):
        playground.set(seed=text)
        page.get_by_role("button", name="Generate").click()
        error = page.locator("#seed-error")
        expect(error).to_be_visible()
        expect(error).to_contain_text("Seed must be an integer")  # the field named as the page labels it
        expect(page.get_by_label("Seed", exact=True)).to_have_attribute("aria-invalid", "true")
        expect(page.locator("[data-action=generate]")).to_be_enabled()
    playground.run(seed=" 0012 ")
    assert playground.sent_of("generate")[-1]["params"]["seed"] == 12
    expect(page.locator("#seed-error")).to_be_hidden()
