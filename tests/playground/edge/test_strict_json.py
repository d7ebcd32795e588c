"""A value nested deeper than any field holds is cut out of the text before the JSON reader sees
it, and refused by field with the request id, on the websocket and over HTTP alike."""

from __future__ import annotations

import json

import pytest

from playground.edge import frames, strict_json
from playground.edge.strict_json import CUT, MAX_DEPTH, shallow, too_deep
from playground.openai_api.errors import ApiError
from playground.openai_api.translate import translate


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def generate(field: str, value_text: str) -> str:
    """A generate frame's text with ``value_text`` in ``params.<field>`` (or at the top for ``prompt``)."""
    if field == "prompt":
        return '{"type": "generate", "request_id": "deep-1", "prompt": ' + value_text + "}"
    return '{"type": "generate", "request_id": "deep-1", "prompt": "hi", "params": {"' + field + '": ' + value_text + "}}"


def test_text_that_nests_no_deeper_than_the_limit_is_left_as_it_is():
    within = {"a": json.loads(nested(MAX_DEPTH)), "b": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "c": [[1, {"d": "]}"}]]}
    text = json.dumps(within)
    assert shallow(text) == text and too_deep(json.loads(text)) is None
    assert shallow(text.encode("utf-16")) == text  # bytes are read as the JSON reader reads them


def test_a_value_opening_below_the_limit_is_cut_out_whole():
    text = json.dumps({"x": 1, "deep": json.loads(nested(MAX_DEPTH + 3)), "after": [2]})
    value = json.loads(shallow(text))
    assert value["x"] == 1 and value["after"] == [2]
    inner = value["deep"]  # the outermost object holds MAX_DEPTH containers: "deep" and MAX_DEPTH - 1 inside it
    for _ in range(MAX_DEPTH - 1):
        assert isinstance(inner, list) and len(inner) == 1
        inner = inner[0]
    assert inner == [CUT]
    assert too_deep(value) == "deep"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 2, 970, 5000, 200_000])
@pytest.mark.parametrize(("field", "param"), [("stop", "params.stop"), ("logit_bias", "params.logit_bias"), ("prompt", "prompt")])
def test_a_frame_nested_past_any_field_is_refused_by_field_with_its_request_id(depth, field, param):
    with pytest.raises(frames.ProtocolError) as refused:
        frames.parse_client_frame(generate(field, nested(depth)))
    event = refused.value.to_event()
    assert event["request_id"] == "deep-1"
    assert event["error"]["code"] == strict_json.CODE and event["error"]["param"] == param
    assert str(MAX_DEPTH) in event["error"]["message"]


def test_a_message_built_in_code_is_measured_too():
    within = json.loads(nested(MAX_DEPTH - 1))  # with "params", MAX_DEPTH containers inside the frame
    assert too_deep({"params": {"stop": within}}) is None
    assert too_deep({"params": {"stop": [within]}}) == "params.stop"


def test_an_http_body_nested_past_any_field_is_a_400_naming_the_field():
    body = frames.parse_json('{"model": "m", "prompt": "hi", "stop": ' + nested(970) + "}")
    with pytest.raises(ApiError) as refused:
        translate(body, "completion", "m")
    assert (refused.value.status, refused.value.param, refused.value.code) == (400, "stop", strict_json.CODE)
