"""The inference workers' current load, gathered from their ping answers (``GET /api/load``).

A worker answers ``inference.ping`` (``playground.worker.consumer.InferenceWorker.inference_ping``) with who it is and, once it batches,
``"load": {"running", "rows", "waiting", "max_batch"}``: requests decoding, rows of the batch in
use, requests taken but not yet decoding, and its batch size. The ping goes to the
``inference-workers`` group, which every worker joins when it takes a request, so each answers
(the shared ``inference`` channel would reach only one, and a full worker may not read it). When no
worker has joined yet (none has taken a request, so all are idle) the ping goes to the shared
channel once, where an idle worker takes it at once. Answers are collected for a short window after
the first and counted once per worker process (host, pid).

The result is kept for :data:`CACHE_S` seconds per process, and callers arriving meanwhile share
one gathering, so pages polling while their run waits cost the workers one ping a second at most.
A caller that must hear the present (a page that has just seen its own run start or end) asks for a
fresh answer: one whose ping went out after it asked. Every answer says how old it is
(``age_ms``: since its ping went out), so a page can say when it was true.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from channels.layers import get_channel_layer

from playground.wire import channel_messages, embedded
from playground.wire.channel_messages import INFERENCE_CHANNEL, WORKERS_GROUP

CACHE_S = 1.0
GROUP_ANSWER_S = 0.5  # how long to wait for the group's first answer (a worker's event loop answers in ms)
FIRST_ANSWER_S = 1.5  # how long to wait for an idle worker on the shared channel
MORE_ANSWERS_S = 0.15  # after the first answer, how long the others have
LOAD_FIELDS = ("running", "rows", "waiting", "max_batch")


@dataclass(frozen=True)
class Load:
    """One gathering's answer: the document, and when its ping went out (``time.monotonic``)."""

    document: dict[str, Any]
    began: float

    def answer(self) -> dict[str, Any]:
        """The document as ``GET /api/load`` sends it: with ``age_ms``, how long ago its ping went out."""
        return self.document | {"age_ms": round((time.monotonic() - self.began) * 1000, 1)}


_cache: Load | None = None
_gathering: asyncio.Future[Load] | None = None
_gathering_asked = 0.0  # when the gathering under way was started (``time.monotonic``)


async def current_load(fresh: bool = False) -> Load:
    """The workers' load, at most :data:`CACHE_S` old; ``fresh``: gathered by a ping sent after this
    call (a gathering already under way for an earlier caller is not shared)."""
    global _cache, _gathering, _gathering_asked
    asked = time.monotonic()
    if _cache is not None and (_cache.began >= asked if fresh else asked - _cache.began < CACHE_S):
        return _cache
    loop = asyncio.get_running_loop()
    if (
        _gathering is None
        or _gathering.done()
        or _gathering.get_loop() is not loop
        or (fresh and _gathering_asked < asked)  # its ping may have gone out before this call
    ):
        _gathering_asked = time.monotonic()
        _gathering = asyncio.ensure_future(_gather())
    result = await asyncio.shield(_gathering)
    if _cache is None or result.began >= _cache.began:  # an earlier gathering that ended late never replaces a newer one
        _cache = result
    return result


def forget() -> None:
    """Drops the cached answer (tests)."""
    global _cache
    _cache = None


async def _gather() -> Load:
    began = time.monotonic()
    embedded.ensure_worker()
    layer = get_channel_layer()
    reply_channel = await layer.new_channel("load.")
    ping = channel_messages.ping(reply_channel)
    await layer.group_send(WORKERS_GROUP, ping)
    answers = await _answers(layer, reply_channel, GROUP_ANSWER_S)
    if not answers:  # no worker has taken a request yet: an idle one reads the shared channel
        await layer.send(INFERENCE_CHANNEL, ping)
        answers = await _answers(layer, reply_channel, FIRST_ANSWER_S)
    return Load(summarize(answers, round((time.monotonic() - began) * 1000, 1)), began)


async def _answers(layer: Any, reply_channel: str, first_s: float) -> list[dict[str, Any]]:
    """Every answer on `reply_channel`: waits up to `first_s` for one, then MORE_ANSWERS_S more."""
    answers: list[dict[str, Any]] = []
    deadline = time.monotonic() + first_s
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            answers.append(await asyncio.wait_for(layer.receive(reply_channel), remaining))
        except TimeoutError:
            break
        deadline = min(deadline, time.monotonic() + MORE_ANSWERS_S)
    return answers


def summarize(answers: list[dict[str, Any]], ms: float) -> dict[str, Any]:
    """The answers as one document: each worker's load and the totals (``available`` false, with a
    reason, when no worker answered or none reports its load)."""
    workers: dict[tuple[str, int], dict[str, Any]] = {}
    for answer in answers:
        load = answer.get("load")
        entry = {"host": answer.get("host"), "pid": answer.get("pid")}
        if isinstance(load, dict) and all(isinstance(load.get(key), int) for key in LOAD_FIELDS):
            entry["load"] = {key: load[key] for key in LOAD_FIELDS}
        else:
            entry["load"] = None
        workers[(str(entry["host"]), int(entry["pid"] or 0))] = entry
    reporting = [w["load"] for w in workers.values() if w["load"] is not None]
    document: dict[str, Any] = {"available": bool(reporting), "workers": list(workers.values()), "ms": ms}
    if reporting:
        document["total"] = {key: sum(load[key] for load in reporting) for key in LOAD_FIELDS}
    elif workers:
        document["reason"] = "the workers do not report their load"
    else:
        document["reason"] = f"no inference worker answered within {GROUP_ANSWER_S + FIRST_ANSWER_S:g} s"
    return document
