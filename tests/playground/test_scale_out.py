"""Scale-out: a daphne with no worker of its own, a `manage.py runworker inference` process, and
Redis between them. The consumer is the same code as in the embedded default. Also idle past
every timeout, and under faults: a worker killed mid-stream, no worker at all."""

from __future__ import annotations

import json
import time

import pytest
from websockets.sync.client import connect

from playground.wire.channel_layer import BLOCKING_READ_SECONDS, READ_MARGIN_SECONDS
from tests.playground.scale_out import ScaleOut, request_events

pytestmark = pytest.mark.real_model

# Longer than every timeout of an idle connection: the layer's blocking read and the client's
# read timeout that must outlast it.
IDLE_SECONDS = BLOCKING_READ_SECONDS + READ_MARGIN_SECONDS + 2
ACK_TIMEOUT = 4  # seconds the web process waits for a worker to take a request (PLAYGROUND_WORKER_ACK_TIMEOUT)
NOTICE_DEADLINE = 5  # seconds: issue 12's bound for a dead worker's clients to hear of it

# Far longer than any wait below on any machine (about the most SmolLM2's 8192-token window allows)
LONG_RUN = {"prompt": "Once upon a time", "params": {"temperature": 0, "max_tokens": 8000, "ignore_eos": True}}
FULL_ACK_TIMEOUT = 1.5  # the two full workers' web process: c waits past it, the long runs still going


@pytest.fixture(scope="module")
def scaled_out(tmp_path_factory):
    """Redis, one runworker process and one daphne without an embedded worker. The worker decodes one
    row at a time, so a second request it takes is held but not started (the killed-worker test)."""
    stack = ScaleOut(
        tmp_path_factory.mktemp("scale-out"), PLAYGROUND_WORKER_ACK_TIMEOUT=str(ACK_TIMEOUT), PLAYGROUND_MAX_BATCH="1"
    )
    try:
        worker, worker_log = stack.start_worker()
        web, web_log = stack.start_web()
        yield {
            "stack": stack,
            "url": stack.url,
            "origin": stack.origin,
            "worker": worker,
            "web": web,
            "logs": (worker_log, web_log),
        }
    finally:
        stack.close()


def test_a_runworker_process_serves_the_websocket_through_redis(scaled_out):
    with connect(scaled_out["url"], origin=scaled_out["origin"]) as ws:
        events = request_events(
            ws,
            {
                "type": "generate",
                "request_id": "r",
                "prompt": "The capital of France is",
                "params": {"temperature": 0, "max_tokens": 4},
            },
        )
    assert [e["type"] for e in events if e["type"] != "loading"][0] == "started", (
        events
    )  # (the model's load notice may come first)
    tokens = [e for e in events if e["type"] == "token"]
    assert tokens[0]["text"] == " Paris"
    assert events[-1]["type"] == "done" and events[-1]["reason"] == "max_tokens"
    worker_log, web_log = scaled_out["logs"]
    assert "inference worker serving" in worker_log.read_text()  # the model lives in the worker process
    assert "inference worker serving" not in web_log.read_text()  # not in the web process


def test_cancel_reaches_the_remote_worker(scaled_out):
    with connect(scaled_out["url"], origin=scaled_out["origin"]) as ws:
        ws.send(
            json.dumps(
                {
                    "type": "generate",
                    "request_id": "c",
                    "prompt": "Once upon a time",
                    "params": {"max_tokens": 4000, "ignore_eos": True},
                }
            )
        )
        while json.loads(ws.recv(timeout=120))["type"] != "token":
            pass
        ws.send(json.dumps({"type": "cancel", "request_id": "c"}))
        while (event := json.loads(ws.recv(timeout=120)))["type"] != "done":
            pass
        assert event["reason"] == "cancelled" and event["usage"]["completion_tokens"] < 4000
        follow = request_events(ws, {"type": "tokenize", "request_id": "t", "text": "hi"}, end_types=("tokens", "error"))
        assert follow[-1]["type"] == "tokens"


def test_idle_worker_and_idle_websocket_outlive_every_timeout(scaled_out):
    """Nothing happens for longer than the Redis reads wait and time out; then the same socket is
    served by the same worker (with redis-py 8's defaults the worker exited after 5 s and daphne
    closed the socket with 1011)."""
    with connect(scaled_out["url"], origin=scaled_out["origin"]) as ws:
        request_events(ws, {"type": "tokenize", "request_id": "before", "text": "hi"}, end_types=("tokens", "error"))
        time.sleep(IDLE_SECONDS)
        assert scaled_out["worker"].poll() is None, scaled_out["logs"][0].read_text()[-3000:]
        assert scaled_out["web"].poll() is None, scaled_out["logs"][1].read_text()[-3000:]
        events = request_events(
            ws,
            {
                "type": "generate",
                "request_id": "after",
                "prompt": "The capital of France is",
                "params": {"temperature": 0, "max_tokens": 3},
            },
            timeout=30,
        )
    assert events[-1]["type"] == "done", events
    assert [e["text"] for e in events if e["type"] == "token"][0] == " Paris"
    for log in scaled_out["logs"]:
        assert "Traceback" not in log.read_text(errors="replace"), log.read_text()[-3000:]


def test_a_killed_worker_is_noticed_its_ids_freed_and_its_partial_run_saved(scaled_out):
    """SIGKILL of the `runworker` mid-stream: its running client hears within 5 s (heartbeats and
    leases, playground/wire/liveness.py) and the partial run is saved as failed with the tokens its client
    saw; the request it held in its backlog but had not started goes to the second worker, which
    serves it to the end. With no worker running at all, a request is refused after the bounded wait.
    Ends with a fresh worker serving, so the other tests find the stack as they expect."""
    stack, worker = scaled_out["stack"], scaled_out["worker"]
    with connect(stack.url, origin=stack.origin) as ws:
        ws.send(json.dumps({"type": "generate", "request_id": "long", **LONG_RUN}))
        # taken by the same worker (its backlog) but waiting for its only row: held, not started
        ws.send(json.dumps({"type": "generate", "request_id": "waiting", "prompt": "Hi", "params": {"max_tokens": 4}}))
        seen: dict[str, list[dict]] = {"long": [], "waiting": []}
        while sum(e["type"] == "token" for e in seen["long"]) < 8:
            event = json.loads(ws.recv(timeout=120))
            if event["type"] != "loading":  # a worker that has not loaded its model yet says so first
                seen[event["request_id"]].append(event)
        first_log = scaled_out["logs"][0]
        assert "took request waiting" in first_log.read_text()  # held by the first worker
        second, second_log = stack.start_worker()  # alive, with room, when the first dies
        worker.kill()  # SIGKILL: no goodbye, no cleanup
        killed_at = time.monotonic()
        heard_at: dict[str, float] = {}
        while len(heard_at) < 2:
            event = json.loads(ws.recv(timeout=120))
            if event["type"] != "loading":  # a worker that has not loaded its model yet says so first
                seen[event["request_id"]].append(event)
            if event["type"] in ("error", "done"):
                heard_at[event["request_id"]] = time.monotonic() - killed_at
        worker.wait(timeout=10)
        print(
            f"heard of the killed worker after {heard_at['long']:.2f} s (running); the held request ended after "
            f"{heard_at['waiting']:.2f} s on the second worker"
        )

        error = seen["long"][-1]
        assert error["error"]["code"] == "worker_lost", error
        assert error["error"]["message"] and error["error"]["param"] is None
        assert heard_at["long"] < NOTICE_DEADLINE, heard_at
        resumed = seen["waiting"]
        assert [e["type"] for e in resumed] == ["started", "token", "token", "token", "token", "done"], resumed
        assert "took request waiting" in second_log.read_text()  # resubmitted, same id, served by the other

        started, *tokens, error = seen["long"]
        assert started["type"] == "started" and all(e["type"] == "token" for e in tokens)
        assert error["run_id"] == started["run_id"]  # the permalink announced in `started` holds
        second.kill()  # idle: now no worker runs at all
        second.wait(timeout=10)

        # The ids are free: reusing them is no `duplicate_request`. No worker runs now (none at all),
        # so each is refused after the documented wait; a worker started later serves the same id.
        sent_at = time.monotonic()
        ws.send(json.dumps({"type": "generate", "request_id": "long", "prompt": "Hi", "params": {"max_tokens": 2}}))
        ws.send(json.dumps({"type": "tokenize", "request_id": "waiting", "text": "hi"}))
        for _ in range(2):
            while (refused := json.loads(ws.recv(timeout=ACK_TIMEOUT + 10)))["type"] == "queued":
                assert refused["request_id"] == "long" and refused["position"] == 1  # the generation waits in line
            waited = time.monotonic() - sent_at
            assert refused["type"] == "error" and refused["error"]["code"] == "no_worker", refused
            assert "runworker" in refused["error"]["message"]
            # after the documented wait; the upper bound is loose (a watch round, a ping, a loaded machine)
            assert ACK_TIMEOUT - 0.5 <= waited < ACK_TIMEOUT + 6, waited
        scaled_out["worker"], worker_log = stack.start_worker()
        scaled_out["logs"] = (worker_log, scaled_out["logs"][1])
        served = request_events(
            ws,
            {
                "type": "generate",
                "request_id": "long",
                "prompt": "The capital of France is",
                "params": {"temperature": 0, "max_tokens": 3},
            },
            timeout=60,
        )
        # (it may wait in line behind the refused request the new worker takes off the channel and drops first)
        served = [e for e in served if e["type"] != "loading"]  # the new worker loads its model first
        waiting = [e for e in served if e["type"] == "queued"]
        answer = served[len(waiting) :]
        assert all(e["type"] == "queued" for e in served[: len(waiting)]), served  # waiting only before it starts
        assert [e["type"] for e in answer] == ["started", "token", "token", "token", "done"], served  # nothing of the old ones
        assert answer[1]["text"] == " Paris" and answer[-1]["reason"] == "max_tokens"

    saved = stack.get_json(f"/r/{started['run_id']}.json")["run"]
    assert saved["status"] == "failed"
    assert saved["result"]["error"]["code"] == "worker_lost"
    assert saved["request"]["prompt"] == LONG_RUN["prompt"]
    assert [(t["index"], t["id"], t["text"]) for t in saved["tokens"]] == [(t["index"], t["id"], t["text"]) for t in tokens]
    assert saved["result"]["text"] == "".join(t["text"] for t in tokens)
    assert LONG_RUN["prompt"] in stack.get(f"/r/{started['run_id']}")  # its page shows (urlopen raises on 4xx/5xx)


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory):
    """Redis, two runworker processes of one row each and no backlog, and one daphne."""
    stack = ScaleOut(
        tmp_path_factory.mktemp("two-workers"),
        PLAYGROUND_MAX_BATCH="1",
        PLAYGROUND_WORKER_BACKLOG="0",
        PLAYGROUND_WORKER_ACK_TIMEOUT=str(FULL_ACK_TIMEOUT),
    )
    try:
        workers = [stack.start_worker() for _ in range(2)]
        stack.start_web()
        yield stack, workers
    finally:
        stack.close()


def test_two_workers_share_the_load_and_a_full_worker_leaves_requests_to_the_other(two_workers):
    """Capacity-aware intake: a worker with no room does not read the shared channel, so the
    second stream goes to the idle worker (not into the busy one's queue), and a third waits in
    the channel until a row frees, then starts: past the ack timeout, since the workers answer
    pings (all full, not gone)."""
    stack, workers = two_workers
    with connect(stack.url, origin=stack.origin) as ws:
        for request_id in ("a", "b", "c"):
            ws.send(json.dumps({"type": "generate", "request_id": request_id, **LONG_RUN}))
            time.sleep(0.5)  # in this order
        tokens: dict[str, int] = {"a": 0, "b": 0, "c": 0}
        while tokens["a"] < 5 or tokens["b"] < 5:
            event = json.loads(ws.recv(timeout=120))
            tokens[event["request_id"]] += event["type"] == "token"
        waited_from = time.monotonic()
        while time.monotonic() - waited_from < FULL_ACK_TIMEOUT + 2:  # past the ack timeout: c still waits
            event = json.loads(ws.recv(timeout=120))
            # c only waits in line: no `no_worker` (the workers are alive, only full), no start
            assert event["request_id"] != "c" or event["type"] == "queued", event
            tokens[event["request_id"]] += event["type"] == "token"
        assert tokens["c"] == 0  # neither worker has room for it
        logs = [log.read_text() for _, log in workers]
        assert sorted(sum(f"took request {r}" in log for r in "ab") for log in logs) == [1, 1], logs  # one each
        assert not any("took request c" in log for log in logs)
        ws.send(json.dumps({"type": "cancel", "request_id": "a"}))
        ends: dict[str, dict] = {}
        while "a" not in ends or tokens["c"] < 3:
            event = json.loads(ws.recv(timeout=120))
            tokens[event["request_id"]] += event["type"] == "token"
            if event["type"] in ("done", "error"):
                ends[event["request_id"]] = event
        assert ends["a"]["reason"] == "cancelled"
        for request_id in ("b", "c"):
            ws.send(json.dumps({"type": "cancel", "request_id": request_id}))
        while len(ends) < 3:
            event = json.loads(ws.recv(timeout=120))
            if event["type"] in ("done", "error"):
                ends[event["request_id"]] = event
    assert all(end["type"] == "done" and end["reason"] == "cancelled" for end in ends.values()), ends
