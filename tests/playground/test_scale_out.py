"""Scale-out: a daphne with no worker of its own, a `manage.py runworker inference` process, and
Redis between them. The consumer is the same code as in the embedded default."""

from __future__ import annotations

import json
import time

import pytest
from websockets.sync.client import connect

from playground.channel_layer import BLOCKING_READ_SECONDS, READ_MARGIN_SECONDS
from tests.playground.scale_out import ScaleOut, request_events

pytestmark = pytest.mark.real_model

# Longer than every timeout of an idle connection: the layer's blocking read and the client's
# read timeout that must outlast it.
IDLE_SECONDS = BLOCKING_READ_SECONDS + READ_MARGIN_SECONDS + 2


@pytest.fixture(scope="module")
def scaled_out(tmp_path_factory):
    """Redis, one runworker process and one daphne without an embedded worker."""
    stack = ScaleOut(tmp_path_factory.mktemp("scale-out"))
    try:
        worker, worker_log = stack.start_worker()
        web, web_log = stack.start_web()
        yield {"stack": stack, "url": stack.url, "origin": stack.origin, "worker": worker, "web": web, "logs": (worker_log, web_log)}
    finally:
        stack.close()


def test_a_runworker_process_serves_the_websocket_through_redis(scaled_out):
    with connect(scaled_out["url"], origin=scaled_out["origin"]) as ws:
        events = request_events(ws, {
            "type": "generate", "request_id": "r", "prompt": "The capital of France is", "params": {"temperature": 0, "max_tokens": 4},
        })
    assert events[0]["type"] == "started", events
    tokens = [e for e in events if e["type"] == "token"]
    assert tokens[0]["text"] == " Paris"
    assert events[-1]["type"] == "done" and events[-1]["reason"] == "max_tokens"
    worker_log, web_log = scaled_out["logs"]
    assert "inference worker serving" in worker_log.read_text()  # the model lives in the worker process
    assert "inference worker serving" not in web_log.read_text()  # not in the web process


def test_cancel_reaches_the_remote_worker(scaled_out):
    with connect(scaled_out["url"], origin=scaled_out["origin"]) as ws:
        ws.send(json.dumps({"type": "generate", "request_id": "c", "prompt": "Once upon a time", "params": {"max_tokens": 4000, "ignore_eos": True}}))
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
        events = request_events(ws, {
            "type": "generate", "request_id": "after", "prompt": "The capital of France is", "params": {"temperature": 0, "max_tokens": 3},
        }, timeout=30)
    assert events[-1]["type"] == "done", events
    assert [e["text"] for e in events if e["type"] == "token"][0] == " Paris"
    for log in scaled_out["logs"]:
        assert "Traceback" not in log.read_text(errors="replace"), log.read_text()[-3000:]
