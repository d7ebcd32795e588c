"""Scale-out: a daphne with no worker of its own, a `manage.py runworker inference` process, and
Redis between them. The consumer is the same code as in the embedded default."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from websockets.sync.client import connect

pytestmark = pytest.mark.real_model

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{process.args} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    pytest.fail(f"nothing listened on {port} within {seconds} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def scaled_out(tmp_path_factory):
    """Redis, one runworker process and one daphne without an embedded worker; yields the ws URL."""
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        pytest.fail("redis-server is not installed (the test command installs Debian's redis-server)")
    state = tmp_path_factory.mktemp("scale-out")
    redis_port, web_port = free_port(), free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "playground.settings.dev",
        "PLAYGROUND_STATE_DIR": str(state),
        "PLAYGROUND_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "PLAYGROUND_EMBEDDED_WORKER": "0",
    }
    processes: list[subprocess.Popen] = []

    def start(name: str, argv: list[str]) -> tuple[subprocess.Popen, Path]:
        log = state / f"{name}.log"
        process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
        processes.append(process)
        return process, log

    try:
        redis, redis_log = start("redis", [redis_server, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        wait_for_port(redis_port, redis, redis_log)
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True, timeout=120)
        worker, worker_log = start("worker", [sys.executable, "manage.py", "runworker", "inference"])
        web, web_log = start("web", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(web_port), "playground.asgi:application"])
        wait_for_port(web_port, web, web_log)
        yield {"url": f"ws://127.0.0.1:{web_port}/ws/generate/", "origin": f"http://127.0.0.1:{web_port}", "worker": worker, "logs": (worker_log, web_log)}
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def request_events(ws, frame: dict, end_types=("done", "error")) -> list[dict]:
    ws.send(json.dumps(frame))
    events = []
    while True:
        event = json.loads(ws.recv(timeout=120))
        if event.get("request_id") == frame["request_id"]:
            events.append(event)
            if event["type"] in end_types:
                return events


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
