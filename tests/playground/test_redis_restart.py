"""A Redis restart under load (issue 32), with the scale-out test's processes: one `runworker` with
two rows and no backlog, a daphne without a worker of its own, and a Redis that keeps nothing on
disk. Redis is restarted while two requests decode and two wait in it for a row: every request then
completes or ends with a documented error, the two that waited in Redis (lost with it) are sent
again by their connection and complete, and the worker and the web process reconnect by themselves."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from websockets.sync.client import connect

from tests.playground.scale_out import ScaleOut, request_events

pytestmark = pytest.mark.real_model

# each of the two running requests outlasts the others' wait to hear `queued` (a 0.5 s grace) on any
# machine; all four still end in seconds
TOKENS = 1000
DOCUMENTED_ENDS = ("interrupted", "worker_lost")  # a run that streamed while Redis restarted (docs/websocket-api.md)
END_TIMEOUT_S = 300  # a loose bound for every request to end, on any machine


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = ScaleOut(tmp_path_factory.mktemp("redis-restart"), PLAYGROUND_MAX_BATCH="2", PLAYGROUND_WORKER_BACKLOG="0")
    try:
        worker, worker_log = stack.start_worker()
        web, web_log = stack.start_web()
        yield stack, (worker, worker_log), (web, web_log)
    finally:
        stack.close()


def frame(request_id: str) -> dict:
    params = {"temperature": 0, "max_tokens": TOKENS, "ignore_eos": True}
    return {"type": "generate", "request_id": request_id, "prompt": f"Story {request_id}: once upon a time", "params": params}


def test_a_redis_restart_loses_no_queued_request_and_everything_reconnects(stack):
    scale_out, (worker, worker_log), (web, web_log) = stack
    ids = [f"r{i}" for i in range(4)]
    events: dict[str, list[dict]] = defaultdict(list)
    with connect(scale_out.url, origin=scale_out.origin) as ws:
        for request_id in ids:
            ws.send(json.dumps(frame(request_id)))

        def receive() -> dict:
            event = json.loads(ws.recv(timeout=END_TIMEOUT_S))
            events[event["request_id"]].append(event)
            return event

        def kinds(request_id: str) -> set[str]:
            return {e["type"] for e in events[request_id]}

        # two decode (tokens flowing), two wait in Redis for a row (their place in line told)
        while sum("token" in kinds(r) for r in ids) < 2 or sum("queued" in kinds(r) for r in ids) < 2:
            assert receive()["type"] not in ("done", "error"), events
        waiting = [r for r in ids if "started" not in kinds(r)]
        assert len(waiting) == 2, events
        scale_out.restart_redis()
        ended: set[str] = set()
        while ended != set(ids):
            event = receive()
            if event["type"] in ("done", "error"):
                ended.add(event["request_id"])

    for request_id in ids:
        end = events[request_id][-1]
        if end["type"] == "error":
            assert end["error"]["code"] in DOCUMENTED_ENDS, end
            continue
        tokens = [e["index"] for e in events[request_id] if e["type"] == "token"]
        assert end["reason"] == "max_tokens" and tokens == list(range(TOKENS)), (request_id, end, tokens)
    for request_id in waiting:  # lost with Redis, sent again by their connection: served in full
        assert events[request_id][-1]["type"] == "done", events[request_id][-3:]

    # the same processes serve a new connection: the worker and the web process reconnected by themselves
    with connect(scale_out.url, origin=scale_out.origin) as ws:
        after = request_events(ws, frame("after") | {"params": {"temperature": 0, "max_tokens": 4}}, timeout=END_TIMEOUT_S)
    assert after[-1]["type"] == "done", after
    assert worker.poll() is None and web.poll() is None
    for log in (worker_log, web_log):
        text = log.read_text()
        assert "Traceback" not in text, text[-3000:]
    assert "resubmitted" in web_log.read_text()
