"""The live comparison's presets (static/runs/js/live-presets.js, run in Node) have what they claim
(issue 30, item 7): read from where the page gets them, turned into the `generate` bodies the page
sends (live-settings.js) and parsed by the server's own frame parser. "Base vs instruct" asks a
question of the server's first instruct model and first base model, greedy with a fixed seed; the
grammar demo runs one prompt free and held to the editor's JSON Schema example, greedy with a
fixed seed. What they show when run is checked by tests/e2e (test_model_picker.py, test_grammar.py)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from playground.edge import frames
from playground.edge.param_facts import live_fields
from tests.js import module_url, run_js

SCRIPT = f"""
    // the page's json_script of the server's live fields, as live-fields.js reads it
    globalThis.document = {{ getElementById: () => ({{ textContent: JSON.stringify(INPUT.fields) }}) }};
    const presets = await import("{module_url("runs/js/live-presets.js")}");
    const live = await import("{module_url("runs/js/live-settings.js")}");
    const {{ GRAMMAR_EXAMPLES }} = await import("{module_url("shared/js/grammar.js")}");
    const preset = (settings) => settings && {{ settings, bodies: live.generateBodies(settings).map((entry) => entry.body) }};
    console.log(JSON.stringify({{
      base_vs_instruct: preset(presets.baseVsInstructSettings(INPUT.models)),
      only_one_kind: presets.baseVsInstructSettings(INPUT.models.filter((m) => m.kind === "base")),
      grammar_demo: preset(presets.grammarDemoSettings()),
      example_schema: JSON.parse(GRAMMAR_EXAMPLES.json_schema),
    }}));
"""


@pytest.fixture(scope="module")
def presets(django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        served = json.loads(Client().get("/api/models").content)
    kinds = {m["kind"] for m in served["models"]}
    if kinds < {"base", "instruct"}:
        pytest.fail(f"the test settings serve {[m['id'] for m in served['models']]}: a base and an instruct model are needed")
    result = run_js(SCRIPT, {"fields": live_fields(), "models": served["models"]})
    result["models"] = served["models"]
    return result


def parsed(body: dict):
    """The job the server makes of a body the page sends (seeds go out as raw JSON numbers)."""
    return frames.parse_client_frame(json.dumps({"type": "generate", "request_id": "p", **body}))


def test_base_vs_instruct_asks_a_question_of_an_instruct_and_a_base_model_greedily_with_a_fixed_seed(presets):
    preset = presets["base_vs_instruct"]
    settings, bodies = preset["settings"], preset["bodies"]
    assert settings["prompt"].endswith("?")  # a question: an instruct model answers it, a base model continues it
    assert settings["seed"].isdigit()
    kinds = {m["id"]: m["kind"] for m in presets["models"]}
    assert [kinds[body["model"]] for body in bodies] == ["instruct", "base"]
    jobs = [parsed(body) for body in bodies]
    for job in jobs:
        request = job.request
        assert request.mode == "completion"  # the base model has no chat template
        assert request.prompt == settings["prompt"]
        assert request.sampling.temperature == 0  # greedy: each model's own likeliest text
        assert request.sampling.seed == int(settings["seed"])
    assert len({job.request.loop.max_tokens for job in jobs}) == 1


def test_base_vs_instruct_needs_both_kinds(presets):
    assert presets["only_one_kind"] is None


def test_the_grammar_demo_holds_one_column_to_the_example_schema_and_varies_nothing_else(presets):
    preset = presets["grammar_demo"]
    free, constrained = (parsed(body).request for body in preset["bodies"])
    assert free.sampling.grammar is None
    assert constrained.sampling.grammar.to_json() == {"type": "json_schema", "schema": presets["example_schema"]}
    assert free.sampling.temperature == constrained.sampling.temperature == 0
    assert free.sampling.seed == constrained.sampling.seed == int(preset["settings"]["seed"])
    assert free.mode == constrained.mode == "chat" and free.prompt == constrained.prompt
    assert "JSON" in free.prompt
    for request in (free, constrained):
        assert request.loop.max_tokens == int(preset["settings"]["max_tokens"])
