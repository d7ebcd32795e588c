"""Sockets closing mid-stream on the Redis layer (the compose stack's shape: daphne, a `runworker`
process, Redis): each closing consumer ends at once, its runs are saved once as cancelled, and the
token events of a socket that stays open all arrive, in order, while the others close around it.

A closing consumer cancels its read of the channel layer. On channels_redis' own layer that read
could be the one doing the process's blocking Redis read for every socket, and cutting it short
could drop another socket's event or leave the consumer waiting past daphne's close timeout, when
daphne kills it ("took too long to shut down"): the compose soak saw both
(``playground/wire/local_mailbox.py``)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time

import pytest
from websockets.sync.client import connect

from tests.playground.scale_out import ScaleOut, events_until
from tests.servers import read_log

pytestmark = pytest.mark.real_model

CLOSERS = 6  # sockets that each open, start a generation, and close at its first token, ROUNDS times
ROUNDS = 4
STEADY_TOKENS = 64
SETTLE_LIMIT_S = 120.0  # a loose upper bound for the cancelled runs to be saved, on any machine
DAPHNE_CLOSE_TIMEOUT_S = 10  # daphne's application_close_timeout


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = ScaleOut(tmp_path_factory.mktemp("closing"))
    try:
        _, worker_log = stack.start_worker()
        _, web_log = stack.start_web()
        yield stack, worker_log, web_log
    finally:
        stack.close()


def close_at_first_token(stack: ScaleOut, name: str, started: list[str]) -> None:
    for round_ in range(ROUNDS):
        with connect(stack.url, origin=stack.origin) as ws:
            request_id = f"{name}r{round_}"
            frame = {
                "type": "generate",
                "request_id": request_id,
                "prompt": f"closer {request_id}: Once upon a time",
                "params": {"max_tokens": 400, "ignore_eos": True, "temperature": 1},
            }
            ws.send(json.dumps(frame))
            while (event := json.loads(ws.recv(timeout=180)))["type"] not in ("token", "error", "done"):
                if event["type"] == "started":
                    started.append(request_id)


def test_closing_sockets_end_at_once_and_an_open_one_misses_nothing(stack):
    scale_out, worker_log, web_log = stack
    started: list[str] = []
    closers = [threading.Thread(target=close_at_first_token, args=(scale_out, f"c{i}", started)) for i in range(CLOSERS)]
    with connect(scale_out.url, origin=scale_out.origin) as steady:
        steady.send(
            json.dumps(
                {
                    "type": "generate",
                    "request_id": "steady",
                    "prompt": "The history of the printing press",
                    "params": {"max_tokens": STEADY_TOKENS, "ignore_eos": True, "temperature": 0},
                }
            )
        )
        for closer in closers:
            closer.start()
        events = events_until(steady, "steady", timeout=300)
        for closer in closers:
            closer.join(timeout=600)
    assert events[-1]["type"] == "done", events[-1]
    assert len(started) >= CLOSERS * ROUNDS // 2, started  # (a few may be refused by the per-client limits)
    assert [e["index"] for e in events if e["type"] == "token"] == list(range(STEADY_TOKENS))

    # every run that started is saved once, as cancelled
    def saved() -> list[tuple[str, str]]:
        with sqlite3.connect(scale_out.state / "playground.sqlite3") as db:
            return db.execute("SELECT status, prompt FROM playground_run WHERE prompt LIKE 'closer %'").fetchall()

    deadline = time.monotonic() + SETTLE_LIMIT_S
    while len(saved()) < len(started) and time.monotonic() < deadline:
        time.sleep(0.2)
    runs = saved()
    assert sorted(prompt.split(":")[0] for _, prompt in runs) == sorted(f"closer {r}" for r in started)
    assert {status for status, _ in runs} == {"cancelled"}, runs

    # daphne kills a consumer that has not ended 10 s after its socket closed; none is
    time.sleep(DAPHNE_CLOSE_TIMEOUT_S + 2)
    log = read_log(web_log)
    assert "took too long to shut down" not in log, [line for line in log.splitlines() if "too long" in line]
    for faults in (log, read_log(worker_log)):
        assert "Traceback" not in faults
