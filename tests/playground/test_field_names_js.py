"""Field names a person reads (static/playground/js/field-names.js, run in Node): the server's real
error messages, made by its own frame parser, come out with the page's labels in place of the API's
`param` (issue 30, item 11: "params.grammar.schema is not valid JSON" showed the internal name).
The API's `param` stays as it is; only what a page shows changes."""

from __future__ import annotations

import json

import pytest

from playground.edge import frames
from playground.edge.frames import ProtocolError
from tests.js import module_url, run_js

SCRIPT = f"""
const names = await import("{module_url("playground/js/field-names.js")}");
console.log(JSON.stringify(INPUT.map(([message, param]) => ({{
  name: names.fieldName(param),
  words: names.inWords(message, param),
  text: names.errorText(message, param),
}}))));
"""


def server_error(**body) -> tuple[str, str]:
    """The message and param the server answers for a generate frame with these fields."""
    frame = {"type": "generate", "request_id": "e", "prompt": "Hi", **body}
    with pytest.raises(ProtocolError) as caught:
        frames.parse_client_frame(json.dumps(frame))
    return caught.value.message, caught.value.param


CASES = [
    (server_error(params={"temperature": -1}), "Temperature", "Temperature must be a number in [0, 2]"),
    (server_error(params={"top_k": "x"}), "Top-k", "Top-k must be an integer"),
    (server_error(params={"grammar": {"type": "json_schema", "schema": 3}}), "JSON Schema", "JSON Schema must be"),
    (server_error(params={"stop": ["ok", 1]}), "Stop strings, entry 2", "Stop strings, entry 2 must be a string"),
    (server_error(params={"logit_bias": {"x": 1}}), "Logit bias, x", "Logit bias keys must be token ids"),
    (server_error(prefix_tokens=[-1]), "The text before the branch, entry 1", "The text before the branch, entry 1 must be"),
    (server_error(params={"speculative": {"draft": "prompt_lookup", "k": 99}}), "Drafted tokens per step (k)", "Drafted tokens"),
    # the page's own check of a schema (static/shared/js/grammar.js), named as the server would
    (
        ("params.grammar.schema is not valid JSON: Unexpected end of JSON input", "params.grammar.schema"),
        "JSON Schema",
        "JSON Schema is not valid JSON",
    ),
    (
        ("params.grammar.options[2] must not be empty", "params.grammar.options[2]"),
        "Choices, entry 3",
        "Choices, entry 3 must not",
    ),
]


def test_server_messages_name_the_field_as_the_page_labels_it():
    results = run_js(SCRIPT, [case[0] for case in CASES])
    for ((message, param), name, start), result in zip(CASES, results, strict=True):
        assert result["name"] == name, (param, result)
        assert result["words"].startswith(start), (message, result)
        assert "params." not in result["words"] and "prefix_tokens" not in result["words"], result
        assert result["text"] == result["words"]  # the message names the field already


def test_a_message_that_does_not_name_its_field_is_led_by_the_name_and_none_is_left_alone():
    results = run_js(
        SCRIPT,
        [
            ["must be a number", "params.top_p"],
            ["the server is busy", None],
            ["params.stop.0 and params.stop.1 clash", "params.stop.0"],  # only whole names are replaced
            ["params.top_k_extra is unknown", "params.top_k"],
            ["Ends with params.temperature.", "params.temperature"],
        ],
    )
    assert results[0] == {"name": "Top-p", "words": "must be a number", "text": "Top-p: must be a number"}
    assert results[1] == {"name": None, "words": "the server is busy", "text": "the server is busy"}
    assert results[2]["words"] == "Stop strings, entry 1 and params.stop.1 clash"
    assert results[3]["words"] == "params.top_k_extra is unknown"
    assert results[4]["words"] == "Ends with Temperature."
