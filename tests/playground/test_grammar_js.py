"""The page's grammar modules run in Node: the editor's text ↔ ``params.grammar``
(static/shared/js/grammar.js), the page's own validity check, and the stage counts and the
"every alternative removed" note the inspector shows (static/shared/js/stage-counts.js). Tables
worked out by hand."""

from __future__ import annotations

import json

from tests.js import module_url, run_js
from tests.playground.token_fixtures import token_event

SCRIPT = f"""
const g = await import("{module_url("shared/js/grammar.js")}");
const s = await import("{module_url("shared/js/stage-counts.js")}");
const {{ editors, grammars, checks, stages, tokens, described }} = INPUT;
console.log(JSON.stringify({{
  fromEditor: editors.map(([type, source]) => g.grammarFromEditor(type, source)),
  toEditor: grammars.map((grammar) => g.editorFromGrammar(grammar)),
  roundTrip: grammars.map((grammar) => g.grammarValue(g.grammarText(grammar))),
  checks: checks.map(([grammar, text]) => g.checkText(grammar, text)),
  stages: stages.map((list) => s.stageCounts(list).map((entry) => entry.text)),
  notes: tokens.map((token) => s.allRemovedNote(token)),
  described: described.map((grammar) => g.describeGrammar(grammar)),
}}));
"""

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}
PERSON = {"type": "json_schema", "schema": SCHEMA}


def run(**tables: list) -> dict:
    payload = {"editors": [], "grammars": [], "checks": [], "stages": [], "tokens": [], "described": []} | tables
    return run_js(SCRIPT, payload)


def test_the_editor_text_becomes_params_grammar_and_back():
    editors = [
        ["", "anything"],
        ["json_schema", json.dumps(SCHEMA)],
        ["json_schema", '{"type": "object",'],
        ["regex", "(yes|no)\\."],
        ["choice", "Paris\n\nLyon\\nsur-mer\n"],
    ]
    out = run(editors=editors)["fromEditor"]
    assert out[0] == {"grammar": None}
    assert out[1] == {"grammar": PERSON}
    assert out[2]["error"]["param"] == "params.grammar.schema"  # named as the server names it
    assert out[2]["error"]["message"].startswith("params.grammar.schema is not valid JSON")
    assert out[3] == {"grammar": {"type": "regex", "pattern": "(yes|no)\\."}}
    assert out[4] == {"grammar": {"type": "choice", "options": ["Paris", "Lyon\nsur-mer"]}}  # blank lines dropped, \\n read


def test_a_grammar_fills_the_editor_and_survives_the_address_text():
    grammars = [PERSON, {"type": "regex", "pattern": "a+"}, {"type": "choice", "options": ["x", "y\nz"]}, None, {"type": "nope"}]
    out = run(grammars=grammars)
    assert out["toEditor"][0] == {"type": "json_schema", "source": json.dumps(SCHEMA, indent=2)}
    assert out["toEditor"][1] == {"type": "regex", "source": "a+"}
    assert out["toEditor"][2] == {"type": "choice", "source": "x\ny\\nz"}
    assert out["toEditor"][3] == out["toEditor"][4] == {"type": "", "source": ""}  # off; a malformed one too
    assert out["roundTrip"] == [*grammars[:3], None, None]


def test_the_pages_check_parses_json_matches_a_whole_regex_and_compares_choices():
    regex = {"type": "regex", "pattern": "(yes|no)\\."}
    checks = [
        [PERSON, '{"name": "John", "age": 45}'],
        [PERSON, '```json\n{"name": "John", "age": 45}\n```'],
        [PERSON, '{"name": "John", "age": "21"}'],
        [PERSON, '{"name": "John"}'],
        [PERSON, '{"name": "John", "age": 4'],
        [regex, "yes."],
        [regex, "yes. And more"],
        [{"type": "choice", "options": ["yes", "no"]}, "no"],
        [{"type": "choice", "options": ["yes", "no"]}, "No"],
    ]
    out = [c["valid"] for c in run(checks=checks)["checks"]]
    assert out == [True, False, False, False, False, True, False, True, False]
    whys = [c["why"] for c in run(checks=checks[1:4])["checks"]]
    assert (
        whys[0].startswith("not JSON")
        and whys[1] == 'JSON, but "age" is not integer'
        and whys[2] == 'JSON, but the value has no "age"'
    )


def test_stage_counts_read_against_what_came_into_each_stage():
    stages = [
        [{"name": "grammar", "kept": 3}, {"name": "temperature", "kept": 3}, {"name": "top_k", "kept": 2}],
        [{"name": "temperature", "kept": 49152}, {"name": "top_p", "kept": 12345}],
    ]
    out = run(stages=stages)["stages"]
    assert out[0] == ["kept 3 of the whole vocabulary", "kept all 3", "kept 2 of 3"]
    assert out[1] == ["kept 49,152 of the whole vocabulary", "kept 12,345 of 49,152"]


def test_a_step_whose_alternatives_were_all_removed_says_so():
    removed = [
        {"id": i, "token": t, "raw_prob": p, "prob": 0.0, "removed_by": "grammar"} for i, t, p in ((1, "\n", 0.8), (2, " ", 0.1))
    ]
    chosen = {"id": 9, "token": '{"', "raw_prob": 0.001, "prob": 1.0, "removed_by": None}
    stages = [{"name": "grammar", "kept": 1}, {"name": "temperature", "kept": 1}]
    step = {"id": 9, "token": '{"', "text": '{"', "prob": 1.0, "stages": stages, "origin": "forced_by_grammar"}
    tokens = [  # whole token events, checked against the event's schema
        token_event(**step, raw_prob=0.001, alternatives=removed),  # chosen below them all
        token_event(**step, raw_prob=0.001, alternatives=[chosen, *removed]),
        token_event(**step, raw_prob=0.001, alternatives=[chosen, {**removed[0], "removed_by": None}]),
        token_event(**step, raw_prob=0.9, alternatives=[chosen]),  # nothing else listed
    ]
    out = run(tokens=tokens)["notes"]
    assert out[0] == (
        "All 2 other listed alternatives were removed by grammar, though the model rated each above the chosen token; "
        "the pick was among the 1 token left."
    )
    assert out[1] == out[0]
    assert out[2] is None and out[3] is None


def test_a_grammar_in_a_few_words():
    described = [PERSON, {"type": "regex", "pattern": "a+"}, {"type": "choice", "options": ["yes", "no"]}, None]
    described += [{"type": "choice"}, {"type": "json_schema", "schema": True}, {"type": "what"}]
    out = run(described=described)["described"]
    assert out == [
        "JSON Schema: object with name, age",
        "Regular expression: /a+/",
        'Choices: "yes" | "no"',
        "off",
        "Choices",  # malformed ones are named, never a crash
        "JSON Schema",
        "unknown",
    ]
