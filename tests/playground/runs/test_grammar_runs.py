"""A run made with a grammar keeps it, on SQLite and on PostgreSQL: the run's JSON, the page's
settings, Replay's request, "Open in playground" and an export's import all carry the constraint
exactly as it was sent, a JSON Schema's property order included (the order its JSON is written in,
which PostgreSQL's ``jsonb`` would otherwise sort). Runs made by the worker's own generation path on
the tiny model; tests/playground/openai_api/test_constrained.py saves one over HTTP on the real one."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import urlsplit

import pytest

from playground.edge import frames
from playground.runs.address import decode_address
from playground.runs.models import Run
from tests.js import module_url, run_js

from .test_round_trip import generate, run_id_of

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])

# properties in an order no sorting gives back: "name" (longer) before "age", "zip" last
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer"}, "zip": {"type": "string"}},
    "required": ["name", "age"],
}
GRAMMAR = {"type": "json_schema", "schema": SCHEMA}
REPLAY = f"""
    import {{ replayRequest }} from "{module_url("runs/js/replay.js")}";
    console.log(JSON.stringify(replayRequest(INPUT.run, INPUT.seed)));
"""


def same(value, expected) -> bool:
    """Equal, key order included."""
    return json.dumps(value) == json.dumps(expected)


@pytest.fixture
def constrained_run(tiny_runtime, db_alias) -> str:
    params = {"temperature": 0.9, "max_tokens": 5, "seed": 3, "grammar": GRAMMAR}
    events = generate(tiny_runtime, "grammar", params=params)
    tokens = [e for e in events if e["type"] == "token"]
    assert tokens and all(t["stages"][0]["name"] == "grammar" for t in tokens)
    return run_id_of(events)


def test_the_runs_json_and_its_replay_keep_the_grammar_as_sent(client, constrained_run):
    exported = client.get(f"/r/{constrained_run}.json").json()
    assert same(exported["run"]["request"]["params"]["grammar"], GRAMMAR)
    assert same(Run.objects.get(pk=constrained_run).parameters()["grammar"], GRAMMAR)
    body = run_js(REPLAY, {"run": exported["run"], "seed": str(exported["run"]["request"]["seed"])})
    assert same(body["params"]["grammar"], GRAMMAR)
    assert body.pop("model") == exported["run"]["model"]["id"]  # Replay asks for the run's own model:
    # the tiny one here, which the served set the frame parser checks against does not hold
    job = frames.parse_client_frame(json.dumps({"type": "generate", "request_id": "r", **body}))
    assert job.request.sampling.grammar.to_json() == GRAMMAR


def test_the_page_shows_the_grammar_and_opens_it_in_the_playground(client, constrained_run):
    page = client.get(f"/r/{constrained_run}").content.decode()
    shown = re.search(r'<td data-param="grammar"><code>(.*?)</code></td>', page, re.S)
    assert shown is not None, "the grammar is in the table of settings set away from their defaults"
    assert same(json.loads(html.unescape(shown.group(1))), GRAMMAR)
    link = re.search(r'href="([^"]*)" data-action="open-in-playground"', page).group(1)
    texts = decode_address(urlsplit(html.unescape(link)).query)
    assert same(json.loads(texts["grammar"]), GRAMMAR)


def test_an_export_imports_with_its_grammar(client, constrained_run):
    content = client.get(f"/r/{constrained_run}.json").content
    answer = client.post("/api/runs/import", data=content, content_type="application/json")
    assert answer.status_code == 201, answer.content
    (copy,) = answer.json()["runs"]
    again = client.get(f"/r/{copy['id']}.json").json()
    assert same(again["run"]["request"]["params"]["grammar"], GRAMMAR)
