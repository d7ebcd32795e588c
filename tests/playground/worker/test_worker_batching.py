"""The embedded worker's decode loop through real websockets (Channels' communicator) and the real
model: requests overlap in one batch, each gives what it gives alone, a cancel touches one row only,
tokenizing never waits, and the ping reports the load."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import get_channel_layer
from django.conf import settings
from django.test import RequestFactory, override_settings

from playground.edge import health
from playground.wire.channel_messages import INFERENCE_CHANNEL, PING
from tests.playground.edge.test_consumer import TIMEOUT, connect

pytestmark = [
    pytest.mark.real_model,
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("decode_loop"),
]

A = {"type": "generate", "request_id": "a", "prompt": "The capital of France is", "params": {"temperature": 0, "max_tokens": 24}}
B = {
    "type": "generate",
    "request_id": "b",
    "prompt": "Once upon a time there was a",
    "params": {"temperature": 0.8, "seed": 42, "max_tokens": 20},
}


async def collect(communicator, request_ids) -> list[dict]:
    """Every event of these requests, in arrival order, until each has ended."""
    events, open_ids = [], set(request_ids)
    while open_ids:
        event = await communicator.receive_json_from(timeout=TIMEOUT)
        events.append(event)
        if event["type"] in ("done", "error") and event.get("request_id") in open_ids:
            open_ids.discard(event["request_id"])
    return events


def tokens_of(events, request_id) -> list[tuple[int, str]]:
    return [(e["id"], e["text"]) for e in events if e["type"] == "token" and e["request_id"] == request_id]


async def alone(frame) -> list[dict]:
    communicator = await connect()
    await communicator.send_json_to(frame)
    events = await collect(communicator, [frame["request_id"]])
    await communicator.disconnect()
    return events


async def test_two_requests_decode_in_the_same_steps_and_each_gives_its_solo_tokens():
    solo_a, solo_b = await alone(A), await alone(B)
    assert "batch" in solo_a[0] and solo_a[0]["batch"]["max_batch"] == settings.INFERENCE["MAX_BATCH"]
    communicator = await connect()
    await communicator.send_json_to(A)
    await communicator.send_json_to(B)
    events = await collect(communicator, ["a", "b"])
    await communicator.disconnect()

    started = {e["request_id"]: e for e in events if e["type"] == "started"}
    assert started["a"]["batch"]["slots"] != started["b"]["batch"]["slots"]  # a row each
    steps = {r: [e["batch"]["step"] for e in events if e["type"] == "token" and e["request_id"] == r] for r in "ab"}
    shared = set(steps["a"]) & set(steps["b"])
    assert shared, steps  # decoded together, one step for both (how many steps depends on when b joined)
    assert all(  # at least these two (a run another test left ending may still hold a row)
        e["batch"]["rows"] >= 2 and e["batch"]["requests"] >= 2 for e in events if e.get("batch", {}).get("step") in shared
    )
    order = [e["request_id"] for e in events if e["type"] == "token"]
    assert "a" in order[order.index("b") :] and "b" in order[order.index("a") :]  # interleaved, not one after the other
    assert tokens_of(events, "a") == tokens_of(solo_a, "a")  # greedy: the same tokens batched as alone
    assert tokens_of(events, "b") == tokens_of(solo_b, "b")  # seeded: the same draws
    draws = lambda evs: [e["draw"] for e in evs if e["type"] == "token"]  # noqa: E731
    assert draws([e for e in events if e.get("request_id") == "b"]) == draws(solo_b)
    for batched, single in zip(
        [e for e in events if e["type"] == "token" and e["request_id"] == "a"], [e for e in solo_a if e["type"] == "token"]
    ):
        assert abs(batched["raw_prob"] - single["raw_prob"]) < 1e-4  # the batch arithmetic's rounding only


async def test_a_cancel_ends_one_row_and_the_other_goes_on_untouched():
    solo_b = await alone(B)
    communicator = await connect()
    long_a = A | {"params": {"temperature": 0, "max_tokens": 500, "ignore_eos": True}}
    await communicator.send_json_to(long_a)
    await communicator.send_json_to(B)
    events = []
    while sum(e["type"] == "token" and e["request_id"] == "a" for e in events) < 3:
        events.append(await communicator.receive_json_from(timeout=TIMEOUT))
    await communicator.send_json_to({"type": "cancel", "request_id": "a"})
    events += await collect(communicator, ["a", "b"] if not any(e["type"] == "done" for e in events) else ["a"])
    await communicator.disconnect()
    done = {e["request_id"]: e for e in events if e["type"] == "done"}
    assert done["a"]["reason"] == "cancelled" and done["a"]["usage"]["completion_tokens"] < 500
    assert tokens_of(events, "b") == tokens_of(solo_b, "b") and done["b"]["reason"] == "max_tokens"


async def test_tokenize_and_ping_answer_while_generations_decode():
    communicator = await connect()
    long_a = A | {"params": {"temperature": 0, "max_tokens": 500, "ignore_eos": True}}
    await communicator.send_json_to(long_a)
    while (await communicator.receive_json_from(timeout=TIMEOUT))["type"] != "token":
        pass
    await communicator.send_json_to({"type": "tokenize", "request_id": "t", "text": "hello world"})
    while (event := await communicator.receive_json_from(timeout=TIMEOUT))["request_id"] != "t":
        assert event["type"] == "token"  # the generation still runs when the tokens come back
    assert event["type"] == "tokens"

    layer = get_channel_layer()
    reply = await layer.new_channel("test.")
    await layer.send(INFERENCE_CHANNEL, {"type": PING, "reply_channel": reply})
    answer = await asyncio.wait_for(layer.receive(reply), TIMEOUT)
    load = answer["load"]  # this run at least (a run another test left ending may still hold a row)
    assert load["running"] >= 1 and load["rows"] >= 1 and load["max_batch"] == settings.INFERENCE["MAX_BATCH"], load

    await communicator.send_json_to({"type": "cancel", "request_id": "a"})
    await collect(communicator, ["a"])
    await communicator.disconnect()


async def test_a_request_waits_in_the_channel_for_a_full_worker_past_the_ack_timeout():
    """Capacity-aware intake: with one row and no backlog, a second request stays in the channel
    (no `no_worker` at the ack timeout: the worker answers pings) and starts when the row frees.
    Whatever the speed: `a` may end by its budget or by the cancel, and until it has ended `b`
    hears only its place in line."""
    inference = settings.INFERENCE | {"MAX_BATCH": 1, "INTAKE_BACKLOG": 0}
    liveness = settings.WORKER_LIVENESS | {"ACK_TIMEOUT_SECONDS": 0.5}
    with override_settings(INFERENCE=inference, WORKER_LIVENESS=liveness):
        communicator = await connect()
        await communicator.send_json_to(A | {"params": {"temperature": 0, "max_tokens": 1500, "ignore_eos": True}})
        while (await communicator.receive_json_from(timeout=TIMEOUT))["type"] != "token":
            pass
        await communicator.send_json_to(B)
        ready = await health.readiness(RequestFactory().get("/ready"))  # a full worker still answers pings
        assert ready.status_code == 200, ready.content
        events, loop = [], asyncio.get_running_loop()
        until = loop.time() + 3 * liveness["ACK_TIMEOUT_SECONDS"]
        while loop.time() < until and not (events and events[-1]["type"] == "done"):
            events.append(await communicator.receive_json_from(timeout=TIMEOUT))
        a_ended = any(e["type"] == "done" and e["request_id"] == "a" for e in events)
        if not a_ended:
            await communicator.send_json_to({"type": "cancel", "request_id": "a"})
        events += await collect(communicator, ["b"] if a_ended else ["a", "b"])
        await communicator.disconnect()
    a_end = next(i for i, e in enumerate(events) if e["type"] == "done" and e["request_id"] == "a")
    # b waits while a holds the row: it hears only its place in line (`queued`), never an error
    assert all(e["type"] == "queued" for e in events[:a_end] if e["request_id"] == "b"), events[:a_end]
    # (a cancel that crossed a's end on its way is answered `unknown_request`, after that end)
    errors = [(i, e) for i, e in enumerate(events) if e["type"] == "error"]
    assert all(e["error"]["code"] == "unknown_request" and i > a_end for i, e in errors), errors
    done = {e["request_id"]: e for e in events if e["type"] == "done"}
    assert done["a"]["reason"] in ("cancelled", "max_tokens") and done["b"]["reason"] == "max_tokens", events[-3:]
    assert [e["type"] for e in events if e["request_id"] == "b" and e["type"] != "queued"][0] == "started"


async def test_a_full_inference_channel_answers_busy_with_a_retry_hint(monkeypatch):
    """The worker has room for one generation; the channel holds one more; the next is refused."""
    layer = get_channel_layer()
    monkeypatch.setattr(layer, "channel_capacity", layer.compile_capacities({INFERENCE_CHANNEL: 1}))
    inference = settings.INFERENCE | {"MAX_BATCH": 1, "INTAKE_BACKLOG": 0}
    with override_settings(INFERENCE=inference):
        communicator = await connect()
        await communicator.send_json_to(A | {"params": {"temperature": 0, "max_tokens": 4000, "ignore_eos": True}})
        while (await communicator.receive_json_from(timeout=TIMEOUT))["type"] != "token":
            pass
        await communicator.send_json_to(B)  # waits in the channel: the worker has no room
        await communicator.send_json_to(B | {"request_id": "c"})  # the channel is full
        while (event := await communicator.receive_json_from(timeout=TIMEOUT))["request_id"] != "c":
            assert event["request_id"] == "a", event
        assert event["type"] == "error" and event["error"]["code"] == "busy", event
        assert event["error"]["retry_after"] > 0
        await communicator.send_json_to({"type": "cancel", "request_id": "a"})
        events = await collect(communicator, ["a", "b"])  # b starts once a's row is free
        await communicator.disconnect()
    done = {e["request_id"]: e for e in events if e["type"] == "done"}
    assert done["a"]["reason"] == "cancelled" and done.get("b", {}).get("reason") == "max_tokens", events[-3:]
