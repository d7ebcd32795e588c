"""GET /api/load's gathering (playground/edge/load.py): the answers summed once per worker process,
the reasons when there is nothing to show, and the real embedded worker answering the ping on the
in-memory channel layer, with the answer kept for a second, or gathered afresh when asked."""

from __future__ import annotations

import os
import time

import pytest

from playground.edge import load
from tests.client_frames import generate
from tests.communicator import TIMEOUT, connect

LOAD = {"running": 2, "rows": 3, "waiting": 1, "max_batch": 8}


def test_answers_are_summed_once_per_worker_process() -> None:
    answers = [
        {"host": "a", "pid": 1, "load": LOAD},
        {"host": "a", "pid": 1, "load": LOAD},  # the same worker answering twice (group and channel)
        {"host": "b", "pid": 1, "load": {"running": 1, "rows": 4, "waiting": 0, "max_batch": 8}},
    ]
    document = load.summarize(answers, 2.0)
    assert document["available"] is True
    assert document["total"] == {"running": 3, "rows": 7, "waiting": 1, "max_batch": 16}
    assert [(w["host"], w["pid"]) for w in document["workers"]] == [("a", 1), ("b", 1)]


def test_nothing_to_show_says_why() -> None:
    silent = load.summarize([], 1500.0)
    assert silent["available"] is False and "no inference worker answered" in silent["reason"]
    older = load.summarize([{"host": "a", "pid": 1, "model_built": True}], 1.0)
    assert older == {
        "available": False,
        "workers": [{"host": "a", "pid": 1, "load": None}],
        "ms": 1.0,
        "reason": "the workers do not report their load",
    }
    malformed = load.summarize([{"host": "a", "pid": 1, "load": {"running": "2"}}], 1.0)
    assert malformed["available"] is False


@pytest.mark.asyncio
async def test_the_embedded_worker_answers_and_the_answer_is_kept_a_second() -> None:
    load.forget()
    first = await load.current_load()
    assert [w["pid"] for w in first.document["workers"]] == [os.getpid()], first
    assert await load.current_load() is first  # within CACHE_S: the same answer, no new ping
    load.forget()
    assert await load.current_load() is not first


@pytest.mark.asyncio
async def test_a_fresh_answer_was_gathered_after_it_was_asked_for_and_says_its_age() -> None:
    load.forget()
    cached = await load.current_load()
    asked = time.monotonic()
    fresh = await load.current_load(fresh=True)
    assert fresh is not cached and fresh.began >= asked  # its ping went out after the call
    assert await load.current_load() is fresh  # and it is what the next caller within CACHE_S shares
    answer = fresh.answer()
    assert answer["age_ms"] >= 0 and answer["age_ms"] >= answer["ms"]  # at least as old as its gathering took
    assert {k: v for k, v in answer.items() if k != "age_ms"} == fresh.document


@pytest.mark.real_model
@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_run_whose_done_has_arrived_is_not_counted_in_a_fresh_answer() -> None:
    """Issue 30: "1 waiting" after Done. The worker stops counting a run once its last event is on
    its way, so a fresh answer asked for after `done` arrived counts nothing for it (this test's run
    is the only one in the process)."""
    communicator = await connect()
    try:
        await communicator.send_json_to(generate("alone", "The capital of France is", params={"max_tokens": 3, "temperature": 0}))
        while (event := await communicator.receive_json_from(timeout=TIMEOUT))["type"] != "done":
            assert event["type"] != "error", event
        answer = (await load.current_load(fresh=True)).answer()
    finally:
        await communicator.disconnect()
    assert answer["available"], answer
    assert {k: answer["total"][k] for k in ("running", "rows", "waiting")} == {"running": 0, "rows": 0, "waiting": 0}, answer
