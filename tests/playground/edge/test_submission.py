"""The request side of the worker protocol (playground/edge/submission.py), tested once for both front
doors: admission, the send, the waiting line's events, replies from a worker (and from a second one),
and where a cancel goes. Over Channels' in-memory layer, with the workers played by the test: no
model, no worker process. The consumer and the HTTP API only translate shapes around it
(test_consumer.py, openai_api/, test_queue.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.layers import InMemoryChannelLayer
from django.conf import settings
from django.test import override_settings

from playground.edge import waiting_line
from playground.edge.client_limits import client_limits
from playground.edge.frames import parse_client_message
from playground.edge.submission import Submissions
from playground.wire import channel_messages
from playground.wire.channel_messages import INFERENCE_CHANNEL, QUICK_CHANNEL, WORKERS_GROUP
from playground.wire.events import Frame

REPLY = "reply!1"
CLIENT = "203.0.113.7"


class Door:
    """A front door: its submissions over a layer of its own, and every event they delivered."""

    def __init__(self, layer: InMemoryChannelLayer | None = None) -> None:
        self.layer = layer or InMemoryChannelLayer()
        self.delivered: list[dict[str, Any]] = []
        self.framed: list[bool] = []  # whether each delivered event came already encoded
        self.submissions = Submissions(self.layer, REPLY, CLIENT, self._deliver)

    async def _deliver(self, event: dict[str, Any] | Frame) -> None:
        # a token comes encoded by its worker (what the socket sends); read back here to compare
        self.delivered.append(event.event() if isinstance(event, Frame) else event)
        self.framed.append(isinstance(event, Frame))

    async def submit(self, request_id: str, kind: str = "generate") -> dict[str, Any] | None:
        frame = {"type": kind, "request_id": request_id}
        frame |= {"text": "hi"} if kind == "tokenize" else {"prompt": "hi", "params": {"max_tokens": 2}}
        return await self.submissions.submit(parse_client_message(frame))

    async def taken_off(self, channel: str = INFERENCE_CHANNEL) -> dict[str, Any]:
        """The next message a worker would take off a shared channel."""
        return await self.layer.receive(channel)

    async def worker_says(self, message: dict[str, Any]) -> None:
        await self.submissions.handle(message)

    def kinds(self) -> list[str]:
        return [event["type"] for event in self.delivered]


def done(request_id: str, reason: str = "max_tokens") -> dict[str, Any]:
    return {"type": "done", "request_id": request_id, "reason": reason}


async def test_a_request_goes_to_its_shared_channel_with_a_lease_and_its_ticket():
    door = Door()
    assert await door.submit("g") is None and await door.submit("t", "tokenize") is None
    generation, quick = await door.taken_off(INFERENCE_CHANNEL), await door.taken_off(QUICK_CHANNEL)
    assert generation["type"] == "inference.request" and generation["reply_channel"] == REPLY
    assert generation["lease"] and isinstance(generation["ticket"], float) and generation["quick"] is False
    assert quick["request_id"] == "t" and quick["quick"] is True and quick["lease"] != generation["lease"]
    assert client_limits().active(CLIENT) == 2
    await door.submissions.close()
    assert client_limits().active(CLIENT) == 0  # closing frees every slot


async def test_a_refused_request_gets_its_refusal_back_and_nothing_is_sent():
    door = Door()
    await door.submit("a")
    assert (await door.submit("a"))["error"]["code"] == "duplicate_request"
    with override_settings(INFERENCE={**settings.INFERENCE, "MAX_REQUESTS_PER_CONNECTION": 1}):
        assert (await door.submit("b"))["error"]["code"] == "too_many_requests"
    with override_settings(WAITING_LINE={**settings.WAITING_LINE, "MAX_WAITING": 1}):  # "a" waits: the line is full
        busy = await door.submit("c")
    assert busy["error"]["code"] == "busy" and busy["error"]["retry_after"] > 0 and busy["request_id"] == "c"
    assert await waiting_line.requests_in_line(door.layer) == 1  # only "a"
    assert set(door.submissions.requests) == {"a"} and client_limits().active(CLIENT) == 1
    assert door.delivered == []  # refusals are the front door's to answer
    await door.submissions.close()


async def test_the_last_event_frees_the_id_and_the_client_slot():
    door = Door()
    await door.submit("a")
    lease = (await door.taken_off())["lease"]
    await door.worker_says(channel_messages.queued("a", "worker!1", lease))
    await door.worker_says(channel_messages.event("a", {"type": "started", "request_id": "a"}, lease, "worker!1"))
    await door.worker_says(channel_messages.event("a", done("a"), lease, "worker!1"))
    assert door.kinds() == ["started", "done"] and client_limits().active(CLIENT) == 0
    assert await door.submit("a") is None  # the id is free again
    await door.submissions.close()


async def test_a_second_worker_that_took_the_request_is_told_to_cancel_and_not_listened_to():
    door = Door()
    await door.submit("a")
    lease = (await door.taken_off())["lease"]
    await door.worker_says(channel_messages.queued("a", "worker!1", lease))
    await door.worker_says(channel_messages.queued("a", "worker!2", lease))
    assert await door.layer.receive("worker!2") == channel_messages.cancel("a", REPLY)
    await door.worker_says(channel_messages.event("a", {"type": "token", "request_id": "a", "i": 2}, lease, "worker!2"))
    await door.worker_says(channel_messages.event("a", {"type": "token", "request_id": "a", "i": 1}, lease, "worker!1"))
    await door.worker_says(channel_messages.finished("a", lease, "worker!2"))
    assert door.delivered == [{"type": "token", "request_id": "a", "i": 1}] and "a" in door.submissions.requests
    assert door.framed == [True]  # passed on as the worker encoded it
    await door.worker_says(channel_messages.finished("a", lease, "worker!1"))
    assert "a" not in door.submissions.requests
    await door.submissions.close()


async def test_a_cancel_asked_before_a_worker_acknowledged_goes_to_it_when_it_does():
    door = Door()
    await door.submit("a")
    lease = (await door.taken_off())["lease"]
    await door.submissions.cancel("a")
    assert "a" in door.submissions.cancel_asked  # nowhere to send it yet
    await door.worker_says(channel_messages.queued("a", "worker!1", lease))
    assert await door.layer.receive("worker!1") == channel_messages.cancel("a", REPLY)
    cancelled = {"type": "error", "request_id": "a", "error": {"code": "cancelled", "message": "", "param": None}}
    await door.worker_says(channel_messages.event("a", cancelled, lease, "worker!1"))
    assert door.kinds() == ["error"]  # ended by the cancel: nothing more
    await door.submissions.close()


async def test_a_cancel_that_crossed_the_end_of_the_run_is_answered_unknown_request_after_it():
    door = Door()
    await door.submit("a")
    lease = (await door.taken_off())["lease"]
    await door.worker_says(channel_messages.queued("a", "worker!1", lease))
    await door.submissions.cancel("a")
    assert await door.layer.receive("worker!1") == channel_messages.cancel("a", REPLY)
    await door.worker_says(channel_messages.event("a", done("a"), lease, "worker!1"))  # it had ended already
    assert door.kinds() == ["done", "error"] and door.delivered[1]["error"]["code"] == "unknown_request"
    await door.submissions.cancel("a")  # and so is any later cancel of it
    assert door.delivered[2]["error"]["code"] == "unknown_request"
    await door.submissions.close()


async def test_closing_cancels_an_acknowledged_request_on_its_worker_only():
    door = Door()
    await door.submit("a")
    lease = (await door.taken_off())["lease"]
    await door.worker_says(channel_messages.queued("a", "worker!1", lease))
    await door.layer.group_add(WORKERS_GROUP, "worker!9")
    await door.submissions.close()
    assert await door.layer.receive("worker!1") == channel_messages.cancel("a", REPLY, closed=True)
    assert await waiting_line.requests_in_line(door.layer) == 0 and "worker!9" not in door.layer.channels
    await door.submissions.close()  # twice: nothing more
    assert "worker!1" not in door.layer.channels


@pytest.mark.parametrize("kind, channel", [("generate", INFERENCE_CHANNEL), ("tokenize", QUICK_CHANNEL)])
async def test_closing_cancels_an_unacknowledged_request_behind_it_and_through_the_workers_group(kind, channel):
    door = Door()
    await door.layer.group_add(WORKERS_GROUP, "worker!9")
    await door.submit("a", kind)
    await door.submissions.close()
    assert (await door.taken_off(channel))["type"] == "inference.request"
    assert await door.taken_off(channel) == channel_messages.cancel("a", REPLY, closed=True)  # the worker that takes it drops it
    assert await door.layer.receive("worker!9") == channel_messages.cancel("a", REPLY, closed=True)


async def test_a_full_shared_channel_still_lets_the_cancel_reach_the_workers_group():
    door = Door(InMemoryChannelLayer(capacity=1))
    await door.layer.group_add(WORKERS_GROUP, "worker!9")
    await door.submit("a")  # the channel is full now
    await door.submissions.close()
    assert await door.layer.receive("worker!9") == channel_messages.cancel("a", REPLY, closed=True)


async def test_a_waiting_generation_hears_its_place_and_moves_up_as_workers_take_requests():
    door = Door()
    for other in ("x", "y"):
        await door.layer.send(INFERENCE_CHANNEL, {"type": "inference.request", "request_id": other, "reply_channel": "z"})
    await door.submit("a")
    assert door.delivered == [{"type": "queued", "request_id": "a", "position": 3, "estimated_wait_s": None}]
    await door.worker_says(channel_messages.taken(None, 0.5, "w1"))  # a worker took what was first in line
    assert door.delivered[-1] == {"type": "queued", "request_id": "a", "position": 2, "estimated_wait_s": 4.0}
    await door.submissions.close()


async def test_a_closed_front_door_reads_nothing_more_and_its_watchdog_never_resubmits(settings):
    """After ``close`` a worker's late messages are not passed on, and the watchdog, stopped for
    good, neither resubmits the request its worker held nor fails the one that had started, however
    long the worker stays silent: the connection is gone, not the worker."""
    settings.WORKER_LIVENESS = {"HEARTBEAT_SECONDS": 0.05, "LEASE_SECONDS": 0.2, "ACK_TIMEOUT_SECONDS": 0.3}
    door = Door()
    await door.submit("held")
    await door.submit("running")
    leases = {m["request_id"]: m["lease"] for m in [await door.taken_off(), await door.taken_off()]}
    for request_id, lease in leases.items():
        await door.worker_says(channel_messages.queued(request_id, "worker!1", lease))
    await door.worker_says(
        channel_messages.event("running", {"type": "started", "request_id": "running"}, leases["running"], "worker!1")
    )
    await door.submissions.close()
    cancels = [await door.layer.receive("worker!1") for _ in leases]
    assert cancels == [channel_messages.cancel(request_id, REPLY, closed=True) for request_id in leases]
    await door.worker_says(channel_messages.event("running", done("running", "cancelled"), leases["running"], "worker!1"))
    await asyncio.sleep(4 * 0.2)  # several leases long: a live watchdog would have judged both by now
    assert [e for e in door.delivered if e["type"] != "queued"] == [{"type": "started", "request_id": "running"}]
    assert door.submissions.watchdog.leases == {} and door.submissions.watchdog.stopped
    assert await waiting_line.requests_in_line(door.layer) == 0  # nothing sent to the line again
    assert "worker!1" not in door.layer.channels  # no cancel for a worker_lost either
