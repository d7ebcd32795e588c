"""Scale-out under faults, with real processes: a `runworker` killed with SIGKILL mid-stream, and
requests that no worker is running to take. The connection notices within 5 s (heartbeats and
leases, playground/liveness.py), says so with a structured error, frees the request ids, and
saves the partial run as failed with the tokens its client saw; with no worker running at all, a
request is refused after a bounded wait."""

from __future__ import annotations

import json
import time

import pytest
from websockets.sync.client import connect

from tests.playground.scale_out import ScaleOut, events_until, request_events

pytestmark = pytest.mark.real_model

ACK_TIMEOUT = 4  # seconds this stack waits for a worker to take a request (PLAYGROUND_WORKER_ACK_TIMEOUT)
NOTICE_DEADLINE = 5  # seconds: issue 12's bound for a dead worker's clients to hear of it

LONG_RUN = {"prompt": "Once upon a time", "params": {"temperature": 0, "max_tokens": 4000, "ignore_eos": True}}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """Redis and a daphne without an embedded worker; each test starts the workers it needs."""
    stack = ScaleOut(tmp_path_factory.mktemp("scale-out-faults"), PLAYGROUND_WORKER_ACK_TIMEOUT=str(ACK_TIMEOUT))
    try:
        stack.start_web()
        yield stack
    finally:
        stack.close()


def test_a_killed_worker_is_noticed_its_ids_freed_and_its_partial_run_saved(stack):
    worker, worker_log = stack.start_worker()
    with connect(stack.url, origin=stack.origin) as ws:
        ws.send(json.dumps({"type": "generate", "request_id": "long", **LONG_RUN}))
        # queued behind "long" on the same worker's decode thread: held, not started
        ws.send(json.dumps({"type": "generate", "request_id": "waiting", "prompt": "Hi", "params": {"max_tokens": 4}}))
        seen: dict[str, list[dict]] = {"long": [], "waiting": []}
        while sum(e["type"] == "token" for e in seen["long"]) < 8:
            event = json.loads(ws.recv(timeout=120))
            seen[event["request_id"]].append(event)
        worker.kill()  # SIGKILL: no goodbye, no cleanup
        killed_at = time.monotonic()
        heard_at: dict[str, float] = {}
        while len(heard_at) < 2:
            event = json.loads(ws.recv(timeout=NOTICE_DEADLINE + 5))
            seen[event["request_id"]].append(event)
            if event["type"] == "error":
                heard_at[event["request_id"]] = time.monotonic() - killed_at
        worker.wait(timeout=10)
        print(f"heard of the killed worker after {heard_at['long']:.2f} s (running) and {heard_at['waiting']:.2f} s (queued)")

        for request_id in ("long", "waiting"):
            error = seen[request_id][-1]
            assert error["error"]["code"] == "worker_lost", error
            assert error["error"]["message"] and error["error"]["param"] is None
            assert heard_at[request_id] < NOTICE_DEADLINE, heard_at
        assert [e["type"] for e in seen["waiting"]] == ["error"]
        assert "run_id" not in seen["waiting"][-1]  # it never started: nothing to save

        started, *tokens, error = seen["long"]
        assert started["type"] == "started" and all(e["type"] == "token" for e in tokens)
        assert error["run_id"] == started["run_id"]  # the permalink announced in `started` holds

        # The ids are free: reusing them is no `duplicate_request`. No worker runs now (none at all),
        # so each is refused after the documented wait; a worker started later serves the same id.
        sent_at = time.monotonic()
        ws.send(json.dumps({"type": "generate", "request_id": "long", "prompt": "Hi", "params": {"max_tokens": 2}}))
        ws.send(json.dumps({"type": "tokenize", "request_id": "waiting", "text": "hi"}))
        for _ in range(2):
            refused = json.loads(ws.recv(timeout=ACK_TIMEOUT + 10))
            waited = time.monotonic() - sent_at
            assert refused["type"] == "error" and refused["error"]["code"] == "no_worker", refused
            assert "runworker" in refused["error"]["message"]
            assert ACK_TIMEOUT - 0.5 <= waited < ACK_TIMEOUT + 3, waited
        stack.start_worker()
        served = request_events(ws, {
            "type": "generate", "request_id": "long", "prompt": "The capital of France is", "params": {"temperature": 0, "max_tokens": 3},
        }, timeout=60)
        assert [e["type"] for e in served] == ["started", "token", "token", "token", "done"], served  # nothing of the old ones
        assert served[1]["text"] == " Paris" and served[-1]["reason"] == "max_tokens"

    saved = stack.get_json(f"/r/{started['run_id']}.json")["run"]
    assert saved["status"] == "failed"
    assert saved["result"]["error"]["code"] == "worker_lost"
    assert saved["request"]["prompt"] == LONG_RUN["prompt"]
    assert [(t["index"], t["id"], t["text"]) for t in saved["tokens"]] == [(t["index"], t["id"], t["text"]) for t in tokens]
    assert saved["result"]["text"] == "".join(t["text"] for t in tokens)

