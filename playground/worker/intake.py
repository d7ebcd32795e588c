"""Capacity-aware intake: a worker reads the shared ``inference`` channel only while it holds fewer
than ``MAX_BATCH + INTAKE_BACKLOG`` generations (``IntakeGate``), so with several workers on one
Redis a request waits in the channel until some worker has room and goes to that one, rather than
queueing behind a busy worker while another is idle. The ``inference-quick`` channel (tokenizing,
inspecting, scoring: no decode slot needed) is read all the time; ``IntakeWorker`` adds it itself
wherever it serves ``inference``. Each request taken off the shared channel is announced to the
waiting line (``playground.edge.waiting_line``).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import deque
from typing import Any
from weakref import WeakKeyDictionary

from channels.worker import Worker
from django.conf import settings

from playground.wire import channel_messages
from playground.wire.channel_messages import INFERENCE_CHANNEL, LINE_GROUP, QUICK_CHANNEL, REQUEST

log = logging.getLogger(__name__)

RATE_WINDOW_SECONDS = 60.0  # a worker's freeing rate counts the rows freed this far back


class FreeingRate:
    """How many rows a worker freed per second over the last ``RATE_WINDOW_SECONDS``."""

    def __init__(self) -> None:
        self._freed: deque[float] = deque()

    def freed(self) -> None:
        self._freed.append(time.monotonic())

    def per_second(self) -> float:
        now = time.monotonic()
        while self._freed and self._freed[0] < now - RATE_WINDOW_SECONDS:
            self._freed.popleft()
        if not self._freed:
            return 0.0
        return len(self._freed) / max(now - self._freed[0], 1.0)


class IntakeGate:
    """How many generations this worker holds, against the room it has: ``MAX_BATCH`` rows decoding
    plus ``INTAKE_BACKLOG`` taken in advance. The intake waits for room before it reads the shared
    channel."""

    def __init__(self) -> None:
        self.held: set[tuple[str, str]] = set()
        self._changed = asyncio.Event()
        self.freeing = FreeingRate()  # the line's pace, told to waiting connections
        self.name = secrets.token_hex(6)  # names this worker's rate in the line's messages

    def take(self, message: dict[str, Any]) -> None:
        if message.get("type") == REQUEST:
            self.held.add((message["reply_channel"], message["request_id"]))

    def release(self, key: tuple[str, str]) -> None:
        if key in self.held:
            self.held.discard(key)
            self.freeing.freed()
        self._changed.set()

    @property
    def room(self) -> int:
        config = settings.INFERENCE
        return int(config["MAX_BATCH"]) + int(config["INTAKE_BACKLOG"])

    async def wait_for_room(self) -> None:
        while len(self.held) >= self.room:
            self._changed.clear()
            await self._changed.wait()


_gates: WeakKeyDictionary[asyncio.AbstractEventLoop, IntakeGate] = WeakKeyDictionary()


def intake_gate() -> IntakeGate:
    """This event loop's gate (one worker per process, or per test's event loop)."""
    loop = asyncio.get_running_loop()
    gate = _gates.get(loop)
    if gate is None:
        gate = _gates[loop] = IntakeGate()
    return gate


class IntakeWorker(Worker):
    """channels' ``Worker`` that reads the shared ``inference`` channel only while this worker has
    room (``IntakeGate``), and the ``inference-quick`` channel all the time, into the same
    application instance; ``manage.py runworker`` and the embedded worker both run it."""

    def __init__(self, application: Any, channels: list[str], channel_layer: Any, **kwargs: Any) -> None:
        channels = list(channels)
        if INFERENCE_CHANNEL in channels and QUICK_CHANNEL not in channels:
            channels.append(QUICK_CHANNEL)  # so `runworker inference` serves quick jobs too
        super().__init__(application, channels, channel_layer, **kwargs)

    async def listener(self, channel: str) -> None:
        gate = intake_gate()
        # quick jobs go to the inference channel's instance: one worker, one set of held jobs
        served = INFERENCE_CHANNEL if channel == QUICK_CHANNEL else channel
        while True:
            if channel == INFERENCE_CHANNEL:
                await gate.wait_for_room()
            message = await self.channel_layer.receive(channel)
            if not message.get("type", None):
                raise ValueError("Worker received message with no type.")
            if channel == INFERENCE_CHANNEL:
                if not message.get("quick"):
                    gate.take(message)
                await self._announce_taken(message, gate)  # the line moved (a request, ping or cancel left it)
            instance_queue = self.get_or_create_application_instance(served, {"type": "channel", "channel": served})
            await instance_queue.put(message)

    async def _announce_taken(self, message: dict[str, Any], gate: IntakeGate) -> None:
        taken = channel_messages.taken(message.get("ticket"), gate.freeing.per_second(), gate.name)
        try:
            await self.channel_layer.group_send(LINE_GROUP, taken)
        except Exception as error:  # noqa: BLE001 — the line's positions are a courtesy; serving goes on
            log.warning("could not tell the waiting line: %s", error)
