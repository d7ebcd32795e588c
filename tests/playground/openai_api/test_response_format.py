"""``response_format`` and the ``grammar`` extension → the one ``grammar`` parameter of the job, and
every bad constraint refused by the body's own name for the field (no model: the translation only;
tests/playground/openai_api/test_constrained.py runs them on the real model)."""

from __future__ import annotations

import pytest

from playground.openai_api.errors import ApiError
from playground.openai_api.translate import translate

MODEL = "SmolLM2-135M-Instruct"
SERVED = ("smollm2-135m-instruct",)
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}


def body(kind: str, **fields) -> dict:
    start = {"prompt": "Hi"} if kind == "completion" else {"messages": [{"role": "user", "content": "Hi"}]}
    return {"model": MODEL, **start, **fields}


def grammar_of(kind: str, **fields) -> dict | None:
    return translate(body(kind, **fields), kind, SERVED).job.request.params_dict()["grammar"]


def refusal(kind: str, **fields) -> ApiError:
    with pytest.raises(ApiError) as caught:
        translate(body(kind, **fields), kind, SERVED)
    assert caught.value.status == 400
    return caught.value


@pytest.mark.parametrize("kind", ["completion", "chat"])
def test_each_response_format_is_a_grammar_on_both_endpoints(kind):
    assert grammar_of(kind) is None
    assert grammar_of(kind, response_format={"type": "text"}) is None
    assert grammar_of(kind, response_format=None) is None
    assert grammar_of(kind, response_format={"type": "json_object"}) == {"type": "json_schema", "schema": {"type": "object"}}
    for strict in (True, False, None):
        json_schema = {"name": "answer", "description": "d", "schema": SCHEMA, "strict": strict}
        given = grammar_of(kind, response_format={"type": "json_schema", "json_schema": json_schema})
        assert given == {"type": "json_schema", "schema": SCHEMA}  # enforced alike, strict or not
    no_schema = grammar_of(kind, response_format={"type": "json_schema", "json_schema": {"name": "any"}})
    assert no_schema == {"type": "json_schema", "schema": {}}
    regex = {"type": "regex", "pattern": "[0-9]{3}"}
    assert grammar_of(kind, grammar=regex) == regex
    assert grammar_of(kind, grammar=regex, response_format={"type": "text"}) == regex


@pytest.mark.parametrize(
    ("fields", "param", "code", "says"),
    [
        (
            {"response_format": {"type": "json_object"}, "grammar": {"type": "regex", "pattern": "a"}},
            "response_format",
            None,
            "not both",
        ),
        ({"response_format": {"type": "xml"}}, "response_format.type", None, "one of"),
        ({"response_format": "json"}, "response_format", None, "object"),
        ({"response_format": {"type": "json_object", "schema": {}}}, "response_format.schema", "unknown_parameter", "schema"),
        ({"response_format": {"type": "json_schema"}}, "response_format.json_schema", "missing_field", "required"),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}},
            "response_format.json_schema.name",
            "missing_field",
            "name",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "a b", "schema": SCHEMA}}},
            "response_format.json_schema.name",
            None,
            "letters",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA, "strict": "yes"}}},
            "response_format.json_schema.strict",
            None,
            "true",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": [1]}}},
            "response_format.json_schema.schema",
            None,
            "object",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "objekt"}}}},
            "response_format.json_schema.schema",
            None,
            "objekt",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"$ref": "#/nowhere"}}}},
            "response_format.json_schema.schema",
            None,
            "nowhere",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA, "examples": []}}},
            "response_format.json_schema.examples",
            "unknown_parameter",
            "examples",
        ),
        ({"grammar": {"type": "regex", "pattern": "[a-"}}, "grammar.pattern", None, "unclosed character class"),
        ({"grammar": {"type": "json_schema", "schema": True}}, "grammar.schema", None, "usable json schema"),
        ({"grammar": {"type": "choice", "options": ["a", ""]}}, "grammar.options[1]", None, "non-empty"),
        ({"grammar": {"type": "sql"}}, "grammar.type", None, "one of"),
        ({"response_format": {"type": "json_object"}, "ignore_eos": True}, "ignore_eos", None, "grammar"),
    ],
)
@pytest.mark.parametrize("kind", ["completion", "chat"])
def test_a_bad_constraint_is_a_400_naming_its_field(kind, fields, param, code, says):
    error = refusal(kind, **fields)
    assert error.param == param
    assert error.code == (code or "invalid_value")
    assert says in error.message and "params." not in error.message
    if param.startswith("response_format") and says != "not both":
        assert "grammar" not in error.message  # the body's names, not ours
