"""GET /api/load's gathering (playground/edge/load.py): the answers summed once per worker process,
the reasons when there is nothing to show, and the real embedded worker answering the ping on the
in-memory channel layer, with the answer kept for a second."""

from __future__ import annotations

import os

import pytest

from playground.edge import load

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
    assert [w["pid"] for w in first["workers"]] == [os.getpid()], first
    assert await load.current_load() is first  # within CACHE_S: the same answer, no new ping
    load.forget()
    assert await load.current_load() is not first
