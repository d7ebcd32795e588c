"""Every field is checked the same way whatever the frame type (issue 32): an integer out of any
field's reach (2^64, -2^64) or a number that is no integer (1e30) is refused by field in each
frame type that has integer fields, and an ``inspect``'s ``max_tokens`` meets the check a
``generate``'s does after the same prompt (the worker's, through the real model)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from playground.edge.frames import ProtocolError, parse_client_frame
from tests.client_frames import generate
from tests.communicator import TIMEOUT, connect

BEYOND = (2**64, -(2**64), 2**63, 10**30, 1e30)  # none fits any field; the first three none fits int64


def tokenize(**fields: Any) -> dict[str, Any]:
    return {"type": "tokenize", "request_id": "t", "text": "hi"} | fields


def inspect(**fields: Any) -> dict[str, Any]:
    return {"type": "inspect", "request_id": "i", "prompt": "hi"} | fields


def score(**fields: Any) -> dict[str, Any]:
    return {"type": "score", "request_id": "s", "prompt": "hi"} | fields


# (frame with the value at ``path``, path): every integer field of every frame type
FIELDS = [
    (lambda v: generate(params={"max_tokens": v}), "params.max_tokens"),
    (lambda v: generate(params={"min_tokens": v}), "params.min_tokens"),
    (lambda v: generate(params={"seed": v}), "params.seed"),
    (lambda v: generate(params={"top_k": v}), "params.top_k"),
    (lambda v: generate(params={"n": v}), "params.n"),
    (lambda v: generate(top_n=v), "top_n"),
    (lambda v: generate(prefix_tokens=[v]), "prefix_tokens.0"),
    (lambda v: generate(watch=[v]), "watch.0"),
    (lambda v: tokenize(offset=v), "offset"),
    (lambda v: tokenize(limit=v), "limit"),
    (lambda v: inspect(params={"max_tokens": v}), "params.max_tokens"),
    (lambda v: inspect(params={"min_tokens": v}), "params.min_tokens"),
    (lambda v: inspect(params={"seed": v}), "params.seed"),
    (lambda v: inspect(variants=[{"max_tokens": v}]), "variants.0.max_tokens"),
    (lambda v: inspect(top_n=v), "top_n"),
    (lambda v: inspect(prefix_tokens=[v]), "prefix_tokens.0"),
    (lambda v: score(top_n=v), "top_n"),
]


@pytest.mark.parametrize("value", BEYOND, ids=repr)
@pytest.mark.parametrize("frame, path", FIELDS, ids=[f"{make(0)['type']}:{path}" for make, path in FIELDS])
def test_a_number_beyond_every_range_is_refused_by_field_in_every_frame_type(frame, path, value):
    with pytest.raises(ProtocolError) as caught:
        parse_client_frame(json.dumps(frame(value)))
    assert caught.value.param == path and caught.value.code == "invalid_value", caught.value.message
    assert caught.value.request_id == frame(value)["request_id"]
    assert len(caught.value.message) < 200  # an excerpt of the value, not the value


def test_a_cancel_with_a_number_beyond_every_range_is_refused_by_field():
    with pytest.raises(ProtocolError) as caught:
        parse_client_frame(json.dumps({"type": "cancel", "request_id": "c", "extra": 2**64}))
    assert caught.value.param == "extra" and caught.value.code == "invalid_value"


@pytest.mark.real_model
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["generate", "inspect"])
async def test_max_tokens_past_the_context_is_refused_alike_for_generate_and_inspect(kind):
    frame = generate(request_id="m") if kind == "generate" else inspect(request_id="m")
    client = await connect()
    await client.send_json_to(frame | {"params": {"max_tokens": 2**63 - 1}})
    while (event := await client.receive_json_from(timeout=TIMEOUT))["type"] in (
        "queued",
        "loading",
    ):  # a cold model says it is loading first
        pass
    await client.disconnect()
    assert event["type"] == "error" and event["request_id"] == "m", event
    assert (event["error"]["code"], event["error"]["param"]) == ("prompt_too_long", "params.max_tokens"), event
