"""The grammar parameter over the websocket as it stands (``params.grammar`` is a sampling field, so
it flows through like the others): a constrained run validates, a bad schema is refused by its
field, and the what-if inspection of a constrained run's position starts the grammar after the
prefix, giving the run's own probabilities."""

from __future__ import annotations

import json

import jsonschema
import pytest

from .test_consumer import connect, events_until_end, expect_error

pytestmark = [pytest.mark.real_model, pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}, "year": {"type": "integer", "minimum": 0, "maximum": 3000}},
    "required": ["city", "year"],
    "additionalProperties": False,
}
PARAMS = {"temperature": 0.8, "seed": 3, "max_tokens": 40, "grammar": {"type": "json_schema", "schema": SCHEMA}}


async def test_a_constrained_run_validates_and_its_inspection_matches_it():
    communicator = await connect()
    frame = {"type": "generate", "request_id": "g", "prompt": "A city and its founding year as JSON.", "mode": "chat"}
    await communicator.send_json_to({**frame, "params": PARAMS, "top_n": 20})
    events = await events_until_end(communicator, "g")
    tokens = [e for e in events if e["type"] == "token"]
    text = "".join(t["text"] for t in tokens)
    jsonschema.validate(json.loads(text), SCHEMA)
    step = 4
    inspect = {"type": "inspect", "request_id": "i", "prompt": frame["prompt"], "mode": "chat", "top_n": 20}
    await communicator.send_json_to({**inspect, "prefix_tokens": [t["id"] for t in tokens[:step]], "params": PARAMS})
    inspection = (await events_until_end(communicator, "i", "inspection"))[-1]
    seen = {a["id"]: a["prob"] for a in inspection["traces"][0]["alternatives"]}
    run = {a["id"]: a["prob"] for a in tokens[step]["alternatives"]}
    assert seen.keys() == run.keys()
    for token_id, prob in run.items():
        assert seen[token_id] == pytest.approx(prob, rel=1e-6, abs=1e-12)
    await communicator.disconnect()


async def test_a_bad_schema_is_refused_by_its_field():
    communicator = await connect()
    bad = {**PARAMS, "grammar": {"type": "json_schema", "schema": {"type": "objekt"}}}
    frame = {"type": "generate", "request_id": "b", "prompt": "x", "params": bad}
    await expect_error(communicator, frame, "invalid_value", "params.grammar.schema")
    await communicator.disconnect()
