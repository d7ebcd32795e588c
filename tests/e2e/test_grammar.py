"""Constrained decoding on the page (a real daphne, the real model, Debian's Chromium): the grammar
editor sends `params.grammar` and the output validates; the inspector shows the `grammar` stage
against the frames; a schema the server refuses shows its error by the editor; the grammar survives
the address, save → /r/<id> → "Open in playground"; the live comparison's demo runs a free and a
constrained column and marks each one's validity as the text says."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jsonschema
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.playground_page import PlaygroundPage, page_errors

pytestmark = pytest.mark.e2e

# The editor's example (GRAMMAR_EXAMPLES in static/shared/js/grammar.js): a closed schema, so the
# constraint ends the text by itself well inside max tokens.
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 16},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "job": {"type": "string", "enum": ["student", "teacher", "doctor", "engineer", "artist", "other"]},
    },
    "required": ["name", "age", "job"],
    "additionalProperties": False,
}
PERSON = {"type": "json_schema", "schema": SCHEMA}
JSON_PROMPT = 'A person as a JSON object with "name" and "age":\n'


def choose(playground: PlaygroundPage, kind: str, source: str | None = None) -> None:
    """Opens the grammar editor, picks a constraint type and (optionally) types its source."""
    page = playground.page
    playground.open_group("Grammar (constrained decoding)")
    page.get_by_role("radio", name=kind, exact=True).check()
    if source is not None:
        page.locator("#grammar-source").fill(source)


def person_is_valid(text: str) -> bool:
    """The schema's own rule, checked here in Python (``jsonschema``, not the engine's library)."""
    try:
        jsonschema.validate(json.loads(text), SCHEMA)
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


def test_a_json_schema_constrains_the_run_and_the_inspector_shows_the_grammar_stage(playground: PlaygroundPage) -> None:
    page = playground.page
    choose(playground, "JSON Schema")  # an empty box gets the example: the person schema
    assert json.loads(page.locator("#grammar-source").input_value()) == SCHEMA
    expect(page.locator("#stage-order li[data-stage=grammar]")).to_have_class(re.compile(r"\bon\b"))  # marked on
    # Beside max tokens, read with it: a constraint cannot finish what max tokens cuts (issue 30).
    note = page.locator("#max-tokens-grammar-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text("cannot finish what max tokens cuts off")
    expect(page.locator("#max-tokens")).to_have_attribute("aria-describedby", re.compile(r"\bmax-tokens-grammar-note\b"))
    page.get_by_role("radio", name="Off", exact=True).check()
    expect(note).to_be_hidden()
    page.get_by_role("radio", name="JSON Schema", exact=True).check()
    expect(note).to_be_visible()
    done = playground.run(JSON_PROMPT, temperature=0.8, seed=1, max_tokens=48)

    assert playground.sent_of("generate")[-1]["params"]["grammar"] == PERSON
    assert done["reason"] == "eos" and person_is_valid(done["text"]), done["text"]
    tokens = playground.events("token")
    assert all(t["stages"][0]["name"] == "grammar" for t in tokens)

    # A step where the grammar removed every listed alternative (the model wanted a newline first).
    first = tokens[0]
    others = [a for a in first["alternatives"] if a["id"] != first["id"]]
    assert others and all(a["removed_by"] == "grammar" for a in others)
    playground.tokens.nth(0).click()
    inspector = page.locator("#inspector")
    kept = first["stages"][0]["kept"]
    expect(inspector.locator(".stage-counts li[data-stage=grammar]")).to_have_text(
        f"grammar kept {kept:,} of the whole vocabulary"
    )
    expect(inspector.locator(".removed-by", has_text="removed by grammar")).to_have_count(len(others))
    expect(inspector.locator(".all-removed")).to_contain_text("removed by grammar")
    expect(inspector.locator(".all-removed")).to_contain_text(f"among the {kept:,} token")

    # A step where it kept thousands: the count reads with separators, and no note.
    wide = next(i for i, t in enumerate(tokens) if t["stages"][0]["kept"] >= 1000)
    playground.tokens.nth(wide).click()
    expect(inspector.locator(".stage-counts li[data-stage=grammar]")).to_contain_text(
        f"kept {tokens[wide]['stages'][0]['kept']:,} of"
    )
    if any(a["removed_by"] is None and a["id"] != tokens[wide]["id"] for a in tokens[wide]["alternatives"]):
        expect(inspector.locator(".all-removed")).to_have_count(0)
    playground.shot("grammar-inspector")

    # The address keeps it: a reload restores the editor and sends the same grammar.
    page.wait_for_function("() => location.search.includes('grammar=')")
    assert json.loads(parse_qs(urlsplit(page.url).query)["grammar"][0]) == PERSON
    page.reload()
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.get_by_role("radio", name="JSON Schema", exact=True)).to_be_checked()
    expect(page.locator("#grammar-editor")).to_have_attribute("open", "")
    assert json.loads(page.locator("#grammar-source").input_value()) == SCHEMA
    assert playground.errors == []


def test_a_schema_the_server_refuses_shows_its_error_by_the_editor(playground: PlaygroundPage) -> None:
    page = playground.page
    choose(playground, "JSON Schema", '{"type": "objekt"}')
    playground.frames.clear()
    page.get_by_label("Prompt", exact=True).fill("Hello")
    page.get_by_role("button", name="Generate").click()
    page.locator("#status[data-state=error]").wait_for(timeout=60_000)
    (error,) = playground.events("error")
    assert error["error"]["param"] == "params.grammar.schema"
    shown = page.locator("#grammar-source-error")
    expect(shown).to_be_visible()
    # the server's words, by the editor, the field named as the page labels it
    expect(shown).to_have_text(error["error"]["message"].replace("params.grammar.schema", "JSON Schema"))
    expect(shown).not_to_contain_text("params.")
    expect(page.locator("#grammar-source")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#grammar-source")).to_be_focused()

    # Not JSON at all: the page says so itself and sends nothing.
    sent = len(playground.sent_of("generate"))
    page.locator("#grammar-source").fill('{"type": ')
    page.get_by_role("button", name="Generate").click()
    expect(shown).to_contain_text("JSON Schema is not valid JSON")
    assert len(playground.sent_of("generate")) == sent
    assert playground.errors == []


def test_a_grammar_survives_save_replay_and_open_in_playground(playground: PlaygroundPage) -> None:
    page = playground.page
    choose(playground, "Choices", "yes\nno")
    done = playground.run("Is Paris in France? Answer:", temperature=0.7, seed=5, max_tokens=8)
    choice = {"type": "choice", "options": ["yes", "no"]}
    assert playground.sent_of("generate")[-1]["params"]["grammar"] == choice
    assert done["reason"] == "eos" and done["text"] in ("yes", "no")

    page.goto(f"{playground.base_url}/r/{done['run_id']}")
    view = page.locator("[data-grammar-view]")
    expect(view).to_be_visible()
    expect(view.locator("h3")).to_contain_text("Choices")
    expect(page.get_by_test_id("grammar-source")).to_have_text("yes\nno")
    expect(page.get_by_test_id("grammar-validity").locator(".validity[data-valid=true]")).to_have_text("✓ one of the choices")
    page.get_by_role("button", name="Replay").click()
    expect(page.get_by_test_id("replay-result")).to_have_text("Replay: identical. Compare with the replay", timeout=90_000)

    page.get_by_role("link", name="Open in playground").click()
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.get_by_role("radio", name="Choices", exact=True)).to_be_checked()
    expect(page.locator("#grammar-source")).to_have_value("yes\nno")
    playground.frames.clear()
    page.get_by_role("button", name="Generate").click()
    again = playground.wait_done()
    assert playground.sent_of("generate")[-1]["params"]["grammar"] == choice
    assert again["text"] == done["text"]  # the same seed and settings: the same answer
    assert playground.errors == []


def test_the_live_comparison_demo_runs_free_and_constrained_and_marks_validity(
    page: Page, daphne_server, artifacts: Path
) -> None:
    errors = page_errors(page)
    sent: list[dict[str, Any]] = []
    received: list[dict[str, Any]] = []

    def watch(socket):
        socket.on("framesent", lambda payload: sent.append(json.loads(payload)))
        socket.on("framereceived", lambda payload: received.append(json.loads(payload)))

    page.on("websocket", watch)
    page.goto(daphne_server.url + "/compare/live")
    page.get_by_role("button", name="Demo: JSON with and without a grammar").click()
    expect(page.get_by_test_id("comparison-link")).to_be_visible(timeout=120_000)

    generates = [f for f in sent if f.get("type") == "generate"]
    assert len(generates) == 2
    assert "grammar" not in generates[0]["params"] and generates[1]["params"]["grammar"] == PERSON
    assert generates[0]["params"]["seed"] == generates[1]["params"]["seed"]  # one seed
    dones = {f["request_id"]: f for f in received if f.get("type") == "done"}
    texts = [dones[g["request_id"]]["text"] for g in generates]
    assert person_is_valid(texts[1]), texts[1]  # the constrained column always validates
    # what the demo claims: greedy, one seed; the free answer is not the bare object, the
    # constrained one is, and it ends by itself well inside max tokens
    assert generates[0]["params"]["temperature"] == generates[1]["params"]["temperature"] == 0
    assert not person_is_valid(texts[0]), texts[0]
    ends = [dones[g["request_id"]] for g in generates]
    assert ends[1]["reason"] == "eos" and ends[1]["usage"]["completion_tokens"] < generates[1]["params"]["max_tokens"], ends[1]
    for n, text in enumerate(texts, start=1):
        mark = page.locator(f"[data-testid=live-aligned] th[data-column='{n}'] .validity")
        expect(mark).to_have_attribute("data-valid", str(person_is_valid(text)).lower())
    expect(page.locator("th[data-column='1'] .validity")).to_contain_text("checked against Settings 2's constraint")
    expect(page.locator("th[data-column='2'] .column-summary")).to_contain_text("grammar: JSON Schema: object with name, age")
    page.screenshot(path=str(artifacts / "grammar-live-demo.png"), full_page=True)

    # Grammar x compare: the saved comparison names the grammar as the one setting that differs, as
    # the JSON it was sent as, and gives the first step (the same context) a range, not 0: the
    # grammar shapes the distribution.
    page.get_by_test_id("comparison-link").click()
    page.wait_for_url("**/compare/*")
    expect(page.get_by_test_id("differing").locator("tbody tr")).to_have_count(1)
    cells = page.locator("tr[data-setting='params.grammar'] td")
    assert cells.nth(0).inner_text() == "null"
    assert json.loads(cells.nth(1).inner_text()) == generates[1]["params"]["grammar"]
    expect(page.locator("[data-testid=aligned] tr[data-index='0'] td.tv")).to_have_attribute("data-tv", "range")
    assert errors == []


def test_a_saved_preset_keeps_the_grammar(playground: PlaygroundPage) -> None:
    page = playground.page
    choose(playground, "Regular expression", "(yes|no)\\.")
    page.get_by_label("Save current settings as", exact=True).fill("yes or no")
    page.get_by_role("button", name="Save preset").click()
    expect(page.locator("#status")).to_contain_text("saved")
    page.goto(playground.base_url + "/")
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.locator("input[name=grammar_type][value='']")).to_be_checked()  # a bare page has none
    page.get_by_role("button", name="Load").click()
    expect(page.get_by_role("radio", name="Regular expression", exact=True)).to_be_checked()
    expect(page.locator("#grammar-source")).to_have_value("(yes|no)\\.")
    expect(page.locator("#grammar-editor")).to_have_attribute("open", "")
    page.wait_for_function("() => location.search.includes('grammar=')")  # and the address follows
    assert json.loads(parse_qs(urlsplit(page.url).query)["grammar"][0]) == {"type": "regex", "pattern": "(yes|no)\\."}
    assert playground.errors == []
