"""Backpressure instead of ``ChannelFull``: a worker whose reply channel is full (nobody reads it fast
enough) stops that request cleanly — one warning, no traceback, its run saved as cancelled, nothing
more sent into that channel — and every other request streams on untouched. A real full channel of
Channels' in-memory layer, the embedded worker and the real model."""

from __future__ import annotations

import asyncio
import logging

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from playground.edge.frames import parse_client_message
from playground.runs.models import Run
from playground.wire import channel_messages, embedded
from playground.wire.channel_messages import INFERENCE_CHANNEL
from tests.playground.worker.test_worker_batching import collect, connect

pytestmark = [
    pytest.mark.real_model,
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("decode_loop"),
]

DEAD = "specific.nobody!reads"  # a reply channel no consumer reads
CAPACITY = 3  # it holds this many messages, then it is full
LONG = {"max_tokens": 400, "ignore_eos": True, "temperature": 0}


async def test_a_full_reply_channel_stops_its_request_with_one_warning_and_nothing_else_is_dropped(monkeypatch, caplog):
    layer = get_channel_layer()
    monkeypatch.setattr(layer, "channel_capacity", layer.compile_capacities({"specific.nobody!*": CAPACITY}))
    caplog.set_level(logging.INFO)
    embedded.ensure_worker()
    listened = await connect()
    await listened.send_json_to({"type": "generate", "request_id": "heard", "prompt": "Once upon a time", "params": LONG})
    job = parse_client_message({"type": "generate", "request_id": "unheard", "prompt": "backpressure: Once", "params": LONG})
    await layer.send(INFERENCE_CHANNEL, channel_messages.request(job, DEAD) | {"lease": "L"})

    events = await collect(listened, ["heard"])  # the other request streams to its end
    await listened.disconnect()
    tokens = [e for e in events if e["type"] == "token"]
    assert events[-1]["type"] == "done" and events[-1]["reason"] == "max_tokens"
    assert [e["index"] for e in tokens] == list(range(LONG["max_tokens"]))

    query = Run.objects.filter(prompt="backpressure: Once")
    for _ in range(600):  # a loose bound: the run is saved once the decode loop sees the cancel
        if await database_sync_to_async(query.exists)():
            break
        await asyncio.sleep(0.1)
    run = await database_sync_to_async(query.get)()
    assert run.status == "cancelled" and len(run.tokens) < LONG["max_tokens"]

    assert layer.channels[DEAD].qsize() == CAPACITY  # the channel was filled, and nothing went in after
    kinds = [layer.channels[DEAD].get_nowait()[1]["type"] for _ in range(CAPACITY)]
    assert kinds[0] == "inference.queued" and "inference.finished" not in kinds
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and "unheard" in r.getMessage()]
    assert len(warnings) == 1 and "is full" in warnings[0].getMessage(), [r.getMessage() for r in warnings]
    assert warnings[0].levelno == logging.WARNING and warnings[0].exc_info is None
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], "a traceback was logged"
