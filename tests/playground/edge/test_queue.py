"""The fair queue through real websockets (Channels' communicator), the embedded worker and the
real model: quick jobs on their own channel never wait behind generations."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.test import override_settings

from tests.playground.edge.test_consumer import TIMEOUT, connect

pytestmark = [
    pytest.mark.real_model,
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("decode_loop"),
]


def generation(request_id: str, max_tokens: int) -> dict:
    params = {"temperature": 0, "max_tokens": max_tokens, "ignore_eos": True}
    return {"type": "generate", "request_id": request_id, "prompt": "The capital of France is", "params": params}


async def test_a_tokenize_is_answered_while_every_slot_is_full_and_generations_wait():
    """One row, no backlog: the worker holds one generation and leaves the shared channel alone, a
    second generation waits there; a tokenize sent after both still comes back before either ends."""
    inference = settings.INFERENCE | {"MAX_BATCH": 1, "INTAKE_BACKLOG": 0}
    with override_settings(INFERENCE=inference):
        communicator = await connect()
        await communicator.send_json_to(generation("a", 8000))  # cancelled long before its end
        while (await communicator.receive_json_from(timeout=TIMEOUT))["type"] != "token":
            pass
        await communicator.send_json_to(generation("b", 5))
        await communicator.send_json_to({"type": "tokenize", "request_id": "t", "text": "hello world"})
        await communicator.send_json_to({"type": "score", "request_id": "s", "prompt": "The capital of France is Paris"})
        answered: list[str] = []
        ended: list[str] = []
        while len(ended) < 2:
            event = await communicator.receive_json_from(timeout=TIMEOUT)
            if event["request_id"] in ("t", "s"):
                answered.append(event["type"])
                if event["type"] == "error":
                    raise AssertionError(event)
                if len(answered) == 2:
                    assert ended == [], ended  # both answered while the generations still run or wait
                    await communicator.send_json_to({"type": "cancel", "request_id": "a"})
            elif event["type"] in ("done", "error"):
                ended.append(event["request_id"])
        assert sorted(answered) == ["prompt_scores", "tokens"]
        await communicator.disconnect()


async def test_waiting_generations_hear_their_place_in_line_and_a_full_line_refuses_at_once():
    """One row, no backlog, a line of two: `a` decodes, `b` and `c` wait and hear their positions
    (c behind b), `d` finds the line full and is refused with `busy` at once; when `a` ends (a
    cancel, once `b` has heard its place: however fast the machine, `a` outlasts the first in
    line's grace), `b` is taken and `c` moves up to first with an estimate from the worker's
    freeing rate."""
    inference = settings.INFERENCE | {"MAX_BATCH": 1, "INTAKE_BACKLOG": 0}
    line = settings.WAITING_LINE | {"MAX_WAITING": 2}
    with override_settings(INFERENCE=inference, WAITING_LINE=line):
        communicator = await connect()
        await communicator.send_json_to(generation("a", 8000))
        while (await communicator.receive_json_from(timeout=TIMEOUT))["type"] != "token":
            pass
        await communicator.send_json_to(generation("b", 3))
        await communicator.send_json_to(generation("c", 3))
        await communicator.send_json_to(generation("d", 3))
        seen: dict[str, list[dict]] = {"a": [], "b": [], "c": [], "d": []}
        while not all(seen[r] and seen[r][-1]["type"] in ("done", "error") for r in "abcd"):
            event = await communicator.receive_json_from(timeout=TIMEOUT)
            seen[event["request_id"]].append(event)
            if event["request_id"] == "b" and event["type"] == "queued":
                await communicator.send_json_to({"type": "cancel", "request_id": "a"})
        await communicator.disconnect()

    (refused,) = seen["d"]
    assert refused["type"] == "error" and refused["error"]["code"] == "busy" and refused["error"]["retry_after"] > 0
    assert seen["a"][-1]["type"] == "done" and seen["a"][-1]["reason"] == "cancelled"
    b_queued = [e for e in seen["b"] if e["type"] == "queued"]
    c_queued = [e for e in seen["c"] if e["type"] == "queued"]
    assert [e["position"] for e in b_queued] == [1]  # first in line until a's row freed
    assert [e["position"] for e in c_queued] == [2, 1]  # behind b, then next once b was taken
    assert c_queued[1]["estimated_wait_s"] > 0  # a's row has freed: the worker's pace is known
    for request_id in "bc":
        kinds = [e["type"] for e in seen[request_id]]
        assert kinds[kinds.index("started") - 1] == "queued" and kinds[-1] == "done", kinds  # queued only before it starts


async def test_the_http_api_answers_429_busy_with_retry_after_when_the_line_is_full(monkeypatch):
    """No worker reads this layer; two requests already wait, the line holds two: the next HTTP
    generation is refused at once (429, code busy, Retry-After), a quick job still goes."""
    from channels.layers import InMemoryChannelLayer

    from playground.edge import frames
    from playground.openai_api import worker_call
    from playground.openai_api.errors import ApiError
    from playground.wire.channel_messages import INFERENCE_CHANNEL, QUICK_CHANNEL

    layer = InMemoryChannelLayer()  # a layer of its own: no embedded worker reads it
    monkeypatch.setattr(worker_call, "get_channel_layer", lambda: layer)
    inference = settings.INFERENCE | {"EMBEDDED_WORKER": False}
    line = settings.WAITING_LINE | {"MAX_WAITING": 2}
    with override_settings(INFERENCE=inference, WAITING_LINE=line):
        for index in range(2):
            await layer.send(INFERENCE_CHANNEL, {"type": "inference.request", "request_id": f"w{index}", "reply_channel": "x"})
        job = frames.parse_client_frame(json.dumps(generation("h", 3)))
        call = worker_call.WorkerCall(job, "127.0.0.1")
        with pytest.raises(ApiError) as refused:
            await call.submit()
        await call.close()
        assert refused.value.status == 429 and refused.value.code == "busy" and refused.value.retry_after > 0
        tokenize = frames.parse_client_frame(json.dumps({"type": "tokenize", "request_id": "t", "text": "hi"}))
        quick = worker_call.WorkerCall(tokenize, "127.0.0.1")
        await quick.submit()  # not in the line: it goes to the quick channel
        sent = await layer.receive(QUICK_CHANNEL)
        assert sent["request_id"] == "t" and sent["quick"] is True
        await quick.close()
