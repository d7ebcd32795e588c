"""A closed connection costs nothing and loses nothing (issue 32), against a real daphne serving the
real model: eight long generations on one websocket, the socket closed at the first token, and the
same for the HTTP API's streamed and non-streamed requests dropped by their client.

Whatever state each request is in when its client goes (waiting in the worker's backlog,
prefilling, decoding, drafting: two of the eight draft by prompt lookup), the server's compute
stops: the decoder call in flight is stopped mid-way once all its requests are cancelled
(``inference.call_stop``), so the CPU the server uses from the close until it holds nothing is
less than it used from the request to the close (the prompts' prefill: with the call stopped it
is a small fraction of that, where a decode going on after the close costs many times it), and
its CPU over a window after that is near idle; measured, not timed. Every run that had started is
saved once, as cancelled; nothing is resubmitted, no channel fills, no traceback is logged. No
assertion depends on how fast the machine is: the waits are for outcomes, with loose upper
bounds, and the CPU bound compares two of the same server's CPU figures.
(``manage.py loadtest --close-cost`` prints the figures: docs/loadtest.md, "A closed socket".)
"""

from __future__ import annotations

import http.client
import json
import sqlite3
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from websockets.sync.client import connect

from tests.servers import Daphne, read_log, running_daphne

pytestmark = pytest.mark.real_model

# ~200 tokens each: the eight prefill over several steps while the first ones decode
PROMPT = " ".join(["The quick brown fox jumps over the lazy dog near the river bank."] * 16)
IDLE_WINDOW_S = 3.0  # how long the server's CPU is sampled once the requests have ended
IDLE_CPU_FRACTION = 0.15  # of one core over that window: an idle daphne, not a decode loop (8 rows: ~2 cores)
SETTLE_LIMIT_S = 60.0  # a loose upper bound for the cancelled runs to be saved, on any machine
LOG_FAULTS = ("resubmitted", "worker_lost", "ChannelFull", "QueueFull", "is full", "Traceback", "UNIQUE", "could not save")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daphne]:
    with running_daphne(
        tmp_path_factory.mktemp("closed"), module="playground.server", PLAYGROUND_MODELS="smollm2-135m-instruct"
    ) as daphne:
        yield daphne


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def runs(server: Daphne, marker: str) -> list[tuple[str, str]]:
    """(status, prompt) of every saved run whose prompt starts with ``marker``."""
    with sqlite3.connect(Path(server.env["PLAYGROUND_STATE_DIR"]) / "playground.sqlite3") as db:
        return db.execute("SELECT status, prompt FROM playground_run WHERE prompt LIKE ?", (marker + "%",)).fetchall()


def load(server: Daphne) -> dict:
    with urllib.request.urlopen(server.url + "/api/load", timeout=60) as response:
        return json.loads(response.read())["total"]


def connect_http(server: Daphne) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SETTLE_LIMIT_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def assert_idle_and_clean(server: Daphne, log_from: int, cpu_before_close: float, cpu_at_close: float) -> None:
    """Every request has left the worker, having cost less CPU after the close (``cpu_at_close``
    on) than before it (from ``cpu_before_close``, when the requests were sent, to the close); then
    the server's CPU over ``IDLE_WINDOW_S`` is near idle, and its log since ``log_from`` names no fault."""
    until(lambda: load(server) == {"running": 0, "rows": 0, "waiting": 0, "max_batch": 8}, "the worker still holds requests")
    pid = server.process.pid
    before = cpu_seconds(pid)
    spent, after_close = cpu_at_close - cpu_before_close, before - cpu_at_close
    assert after_close < spent, f"{after_close:.2f} CPU-s from the close until the worker was free, {spent:.2f} before it"
    time.sleep(IDLE_WINDOW_S)
    used = cpu_seconds(pid) - before
    assert used < IDLE_CPU_FRACTION * IDLE_WINDOW_S, f"the server used {used:.2f} CPU-s in {IDLE_WINDOW_S} s after the close"
    log = read_log(server.log_path)[log_from:]
    faults = [line for line in log.splitlines() if any(fault in line for fault in LOG_FAULTS)]
    assert faults == [], "\n".join(faults)


def test_a_socket_closed_at_the_first_token_ends_its_eight_requests_at_once(server: Daphne) -> None:
    log_from = len(read_log(server.log_path))
    started: set[str] = set()
    cpu_before_close = cpu_seconds(server.process.pid)
    with connect(server.websocket_url, origin=server.origin) as socket:
        for i in range(8):
            frame = {
                "type": "generate",
                "request_id": f"q{i}",
                "prompt": f"ws-q{i}: {PROMPT}",
                "params": {"max_tokens": 2000, "ignore_eos": True, "temperature": 1},
            }
            if i >= 6:  # drafting too: prompt lookup finds the prompt's repeats
                frame["params"]["speculative"] = {"draft": "prompt_lookup"}
            socket.send(json.dumps(frame))
        while True:
            event = json.loads(socket.recv(timeout=120))
            assert event["type"] != "error", event
            if event["type"] == "started":
                started.add(event["request_id"])
            if event["type"] == "token":
                break
        cpu_at_close = cpu_seconds(server.process.pid)
    # the client is gone: whatever each request was doing, it ends now
    until(lambda: len(runs(server, "ws-q")) >= len(started), "the started runs were not saved")
    assert_idle_and_clean(server, log_from, cpu_before_close, cpu_at_close)
    saved = runs(server, "ws-q")
    assert {status for status, _ in saved} == {"cancelled"}, saved
    prompts = [prompt.split(":")[0] for _, prompt in saved]
    assert len(prompts) == len(set(prompts)) and {f"ws-{i}" for i in started} <= set(prompts), (started, prompts)


@pytest.mark.parametrize("stream", [True, False])
def test_an_http_client_that_drops_its_request_ends_it(server: Daphne, stream: bool) -> None:
    log_from = len(read_log(server.log_path))
    marker = f"api-{stream}"
    body = {
        "model": "smollm2-135m-instruct",
        "prompt": f"{marker}: {PROMPT}",
        "max_tokens": 2000,
        "ignore_eos": True,
        "stream": stream,
    }
    connection = connect_http(server)
    cpu_before_close = cpu_seconds(server.process.pid)
    connection.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    if stream:
        response = connection.getresponse()
        assert response.status == 200
        while not response.fp.readline().startswith(b"data:"):  # (keep-alive comments while it waits for a row)
            pass  # the first event of the stream: the run has started
    else:
        until(lambda: load(server)["running"] >= 1, "the request did not start")
    cpu_at_close = cpu_seconds(server.process.pid)
    connection.sock.close()  # the client goes away mid-run
    connection.close()
    until(lambda: len(runs(server, marker)) == 1, "the dropped run was not saved")
    assert_idle_and_clean(server, log_from, cpu_before_close, cpu_at_close)
    assert runs(server, marker) == [("cancelled", body["prompt"])]
