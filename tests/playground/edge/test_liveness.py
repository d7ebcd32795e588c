"""The liveness rules on their own, over Channels' in-memory layer with short timings: what a
worker's heartbeats name, which messages a connection's watchdog accepts, and when it gives a
request up. The same code against real processes and Redis: test_scale_out.py."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace

import pytest
from channels.layers import InMemoryChannelLayer

from playground.edge.watchdog import NO_WORKER, WORKER_LOST, Watchdog
from playground.wire import channel_messages
from playground.wire.liveness import Timing
from playground.worker.heartbeat import WorkerHeartbeat, heartbeats

FAST = {"HEARTBEAT_SECONDS": 0.1, "LEASE_SECONDS": 0.4, "ACK_TIMEOUT_SECONDS": 0.6}
JOB = {"type": "inference.request", "request_id": "r", "reply_channel": "x", "job": {}}


@pytest.fixture
def fast(settings):
    settings.WORKER_LIVENESS = FAST
    return Timing.from_settings()


class Connection:
    """A watchdog and what it delivered, as a consumer would hold them."""

    def __init__(self) -> None:
        self.layer = InMemoryChannelLayer()
        self.delivered: list[dict] = []
        self.watchdog = Watchdog(self.layer, "reply!1", self._deliver)

    async def _deliver(self, message: dict) -> None:
        if self.watchdog.accepts(message):  # as the consumer's inference_event does
            self.delivered.append(message["event"])

    def submit(self, request_id: str = "r") -> str:
        return self.watchdog.submitted(request_id, None, JOB | {"request_id": request_id})["lease"]

    def queued(self, token: str, request_id: str = "r", worker: str = "worker!1") -> bool:
        return self.watchdog.accepts(
            {"type": "inference.queued", "request_id": request_id, "worker_channel": worker, "lease": token}
        )

    def started(self, token: str, request_id: str = "r", worker: str = "worker!1") -> bool:
        started = {"type": "started", "request_id": request_id}  # (no run id: nothing to save)
        return self.watchdog.accepts(channel_messages.event(request_id, started, token, worker))


def test_timing_refuses_a_lease_one_late_heartbeat_would_break():
    with pytest.raises(ValueError, match="at least twice HEARTBEAT_SECONDS"):
        Timing(heartbeat_seconds=1, lease_seconds=1.5, ack_timeout_seconds=30)
    with pytest.raises(ValueError, match="ACK_TIMEOUT_SECONDS"):
        Timing(heartbeat_seconds=1, lease_seconds=3, ack_timeout_seconds=0)


def test_heartbeats_name_each_connections_requests_once():
    held = [
        SimpleNamespace(request_id="a", reply_channel="c1", lease="L1"),
        SimpleNamespace(request_id="b", reply_channel="c1", lease="L2"),
        SimpleNamespace(request_id="c", reply_channel="c2", lease="L3"),
        SimpleNamespace(request_id="d", reply_channel="c3", lease=None),  # a connection that does not watch
    ]
    models = ["smollm2-135m-instruct", "gemma-3-270m"]  # which models the worker serves (scale-out)
    assert heartbeats("w!1", held, models) == {
        "c1": {"type": "inference.heartbeat", "worker_channel": "w!1", "leases": [["a", "L1"], ["b", "L2"]], "models": models},
        "c2": {"type": "inference.heartbeat", "worker_channel": "w!1", "leases": [["c", "L3"]], "models": models},
    }


async def test_a_worker_beats_while_it_holds_requests_and_stops_after(fast):
    layer = InMemoryChannelLayer()
    jobs = {"k": SimpleNamespace(request_id="r", reply_channel="reply!1", lease="L")}
    beat = WorkerHeartbeat(jobs.values)
    beat.ensure_running(layer, "worker!1")
    first = await asyncio.wait_for(layer.receive("reply!1"), 2)
    assert first == {"type": "inference.heartbeat", "worker_channel": "worker!1", "leases": [["r", "L"]], "models": []}
    jobs.clear()
    await asyncio.sleep(3 * fast.heartbeat_seconds)
    assert beat._task is not None and beat._task.done()  # no requests, no beating


async def test_each_submission_has_its_own_lease_and_old_ones_are_dropped(fast):
    connection = Connection()
    first = connection.submit()
    assert connection.queued(first)
    done = {"type": "inference.event", "request_id": "r", "lease": first, "event": {"type": "done", "request_id": "r"}}
    assert connection.watchdog.accepts(done)
    second = connection.submit()  # the client reuses the id at once
    assert second != first
    # the first submission's late `finished` must not free the second's id
    assert not connection.watchdog.accepts({"type": "inference.finished", "request_id": "r", "lease": first})
    assert connection.watchdog.accepts({"type": "inference.finished", "request_id": "r", "lease": second})
    # a request no longer watched accepts nothing that names a lease
    assert not connection.watchdog.accepts({"type": "inference.finished", "request_id": "r", "lease": second})
    connection.watchdog.stop()


async def test_a_silent_worker_loses_its_requests_and_is_told_to_cancel(fast):
    connection = Connection()
    token = connection.submit()
    connection.queued(token)
    connection.started(token)
    lost_after = time.monotonic()
    while not connection.delivered:
        await asyncio.sleep(0.02)
    waited = time.monotonic() - lost_after
    (error,) = connection.delivered
    assert error["type"] == "error" and error["request_id"] == "r" and error["error"]["code"] == WORKER_LOST
    assert "run_id" not in error  # no run was announced
    # not before the lease ran out; the upper bound is loose: each stall of a loaded machine's event
    # loop is added to the lease as well as to the wait (the watchdog does not count it against a worker)
    assert fast.lease_seconds <= waited < fast.lease_seconds + 3 * fast.watch_interval + 5
    cancel = await asyncio.wait_for(connection.layer.receive("worker!1"), 1)
    assert cancel == channel_messages.cancel("r", "reply!1")
    assert connection.watchdog.leases == {}


async def test_heartbeats_keep_a_quiet_request_alive(fast):
    connection = Connection()
    token = connection.submit()
    connection.queued(token)
    connection.started(token)
    for _ in range(int(3 * fast.lease_seconds / fast.heartbeat_seconds)):
        await asyncio.sleep(fast.heartbeat_seconds)
        connection.watchdog.heartbeat({"type": "inference.heartbeat", "worker_channel": "worker!1", "leases": [["r", token]]})
    assert connection.delivered == []
    connection.watchdog.heartbeat({"type": "inference.heartbeat", "worker_channel": "worker!1", "leases": [["r", "other"]]})
    deadline = time.monotonic() + fast.lease_seconds + 5  # a loaded machine's stalls push the expiry later
    while not connection.delivered and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert [e["error"]["code"] for e in connection.delivered] == [WORKER_LOST]  # a foreign lease renews nothing


async def test_a_request_its_lost_worker_never_started_goes_back_to_the_channel_under_a_new_lease(fast):
    connection = Connection()
    token = connection.submit()
    connection.queued(token)  # taken into a worker's backlog, which then dies without a word
    resubmitted = await asyncio.wait_for(connection.layer.receive("inference"), fast.lease_seconds + 2)
    assert connection.delivered == []  # not failed
    assert resubmitted["request_id"] == "r" and resubmitted["job"] == JOB["job"] and resubmitted["lease"] != token
    cancel = await asyncio.wait_for(connection.layer.receive("worker!1"), 1)  # should the old one come back
    assert cancel == channel_messages.cancel("r", "reply!1")
    assert not connection.queued(token)  # the lost worker's old lease is not listened to any more
    assert connection.queued(resubmitted["lease"], worker="worker!2")  # another worker takes it
    assert connection.started(resubmitted["lease"], worker="worker!2")
    done = channel_messages.event("r", {"type": "done", "request_id": "r"}, resubmitted["lease"], "worker!2")
    await connection._deliver(done)
    assert [e["type"] for e in connection.delivered] == ["done"] and connection.watchdog.leases == {}


async def test_a_request_no_worker_takes_is_refused_after_the_ack_timeout(fast):
    connection = Connection()
    connection.submit()
    started = time.monotonic()
    while not connection.delivered:
        await asyncio.sleep(0.02)
    assert time.monotonic() - started >= fast.ack_timeout_seconds
    assert connection.delivered[0]["error"]["code"] == NO_WORKER
    # a worker that takes the request later finds its cancel behind it (running workers hear it too)
    cancel = await asyncio.wait_for(connection.layer.receive("inference"), 1)
    assert cancel == channel_messages.cancel("r", "reply!1")


async def test_a_stalled_connection_does_not_blame_its_worker(fast):
    """The connection's own event loop stood still (so the heartbeats waited unread): the watchdog
    counts the stall in the worker's favour instead of giving the request up."""
    connection = Connection()
    token = connection.submit()
    connection.queued(token)
    await asyncio.sleep(fast.watch_interval)
    time.sleep(3 * fast.lease_seconds)  # the loop is blocked
    await asyncio.sleep(0.01)  # the overdue watchdog runs first, before the heartbeats that waited
    connection.watchdog.heartbeat({"type": "inference.heartbeat", "worker_channel": "worker!1", "leases": [["r", token]]})
    await asyncio.sleep(2 * fast.watch_interval)
    assert connection.delivered == []
    connection.watchdog.stop()


async def test_heartbeats_waiting_unread_in_the_connections_own_channel_blame_the_connection(fast):
    """The worker beats, but the connection does not read its channel (its consumer is busy, or
    closing): the watchdog sees the words waiting there and blames no worker, however long it
    lasts; once they are read the request is judged by them again."""
    connection = Connection()
    token = connection.submit()
    connection.queued(token)
    connection.started(token)
    beat = {"type": "inference.heartbeat", "worker_channel": "worker!1", "leases": [["r", token]]}
    for _ in range(int(4 * fast.lease_seconds / fast.heartbeat_seconds)):
        await connection.layer.send("reply!1", beat)  # into the connection's channel, unread
        await asyncio.sleep(fast.heartbeat_seconds)
    assert connection.delivered == [] and "r" in connection.watchdog.leases
    while (await connection.layer.receive("reply!1")) and connection.layer.channels.get("reply!1"):
        pass  # the connection reads its mail
    connection.watchdog.heartbeat(beat)
    await asyncio.sleep(2 * fast.watch_interval)
    assert connection.delivered == []
    connection.watchdog.stop()


STARTED = {
    "type": "started",
    "request_id": "r",
    "seed": 7,
    "mode": "completion",
    "top_n": 2,
    "use_cache": True,
    "prompt_tokens": [{"id": 0, "text": "<|endoftext|>"}, {"id": 504, "text": "The"}],
    "params": {"temperature": 0, "max_tokens": 64, "seed": 7},
    "model": {
        "name": "m",
        "manifest_sha256": "0" * 64,
        "onnxruntime_version": "1",
        "execution_provider": "CPUExecutionProvider",
        "context_window": 8192,
    },
}
TOKEN = {
    "type": "token",
    "request_id": "r",
    "sample": 0,
    "index": 0,
    "id": 3575,
    "token": " capital",
    "text": " capital",
    "raw_prob": 0.5,
    "prob": 1.0,
    "draw": None,
    "entropy": {"before": 1.0, "after": 0.0},
    "elapsed_ms": 3.0,
    "alternatives": [{"id": 3575, "token": " capital", "raw_prob": 0.5, "prob": 1.0, "removed_by": None}],
    "stages": [],
    "removed_by": None,
    "forced": False,
}


@pytest.mark.django_db
def test_a_relayed_run_is_saved_as_failed_under_the_announced_id_once():
    from playground.edge.watchdog import relayed_recorder, save_failed_run
    from playground.runs.ids import hash_delete_token, new_delete_token, new_run_id
    from playground.runs.models import Run

    started = STARTED | {"run_id": new_run_id(), "delete_token": new_delete_token()}
    recorder = relayed_recorder("r", {"prompt": "The", "mode": "completion", "system": None, "prefix_tokens": []}, started)
    recorder.observe(TOKEN)
    error = {"type": "error", "request_id": "r", "error": {"code": WORKER_LOST, "message": "gone", "param": None}}
    assert save_failed_run(recorder, error) == started["run_id"]
    run = Run.objects.get(pk=started["run_id"])
    assert run.status == Run.Status.FAILED and run.error["code"] == WORKER_LOST
    assert run.delete_token_hash == hash_delete_token(started["delete_token"])  # the client's token deletes it
    assert run.text == " capital" and len(run.tokens) == 1
    # saved already (by its worker, just before it died): that record stands, no second insert
    assert save_failed_run(recorder, error) == started["run_id"]
    assert Run.objects.filter(pk=started["run_id"]).count() == 1


async def test_a_worker_answering_pings_keeps_waiting_only_the_requests_of_models_it_serves(fast):
    """Every worker answers the watchdog's ping with the models it serves: a request for a model none
    of them serves is not "waiting for a full worker's room" but has no worker (``no_worker``)."""
    connection = Connection()
    layer = connection.layer
    worker = await layer.new_channel("worker.")
    await layer.group_add(channel_messages.WORKERS_GROUP, worker)

    async def answer_pings() -> None:  # as InferenceWorker.inference_ping answers, serving SmolLM2 only
        while True:
            ping = await layer.receive(worker)
            pong = channel_messages.pong("host", 1, {}, {"model_built": True}, ["smollm2-135m-instruct"])
            await layer.send(ping["reply_channel"], pong)

    answering = asyncio.ensure_future(answer_pings())
    try:
        connection.watchdog.submitted("g", None, JOB | {"request_id": "g", "model": "gemma-3-270m"})

        async def refused() -> None:
            while not connection.delivered:
                await asyncio.sleep(0.02)

        await asyncio.wait_for(refused(), 30)  # were its worker counted, it would wait for room (minutes)
        assert connection.delivered[0]["request_id"] == "g"
        assert connection.delivered[0]["error"]["code"] == NO_WORKER
    finally:
        answering.cancel()


@pytest.mark.django_db(transaction=True)
async def test_tokens_relayed_as_frames_are_saved_when_their_worker_is_lost(fast):
    from playground.runs.ids import new_delete_token, new_run_id
    from playground.runs.models import Run

    connection = Connection()
    record = {"prompt": "The", "mode": "completion", "system": None, "prefix_tokens": []}
    token = connection.watchdog.submitted("r", record, JOB)["lease"]
    connection.queued(token)
    started = STARTED | {"run_id": new_run_id(), "delete_token": new_delete_token()}
    assert connection.watchdog.accepts(channel_messages.event("r", started, token, "worker!1"))
    relayed = channel_messages.event("r", TOKEN, token, "worker!1")
    assert "event" not in relayed and json.loads(relayed["frame"]) == TOKEN  # encoded once, by the worker
    assert connection.watchdog.accepts(relayed)
    while not connection.delivered:  # the worker says nothing more: lost
        await asyncio.sleep(0.02)
    (error,) = connection.delivered
    assert error["error"]["code"] == WORKER_LOST and error["run_id"] == started["run_id"]
    run = await Run.objects.aget(pk=started["run_id"])
    assert run.status == Run.Status.FAILED and run.text == " capital" and len(run.tokens) == 1  # the frame, read at last
