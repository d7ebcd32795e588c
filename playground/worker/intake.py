"""Capacity-aware intake: a worker reads a model's shared ``inference`` channel only while it holds
fewer than ``MAX_BATCH + INTAKE_BACKLOG`` generations of that model (``IntakeGate``; each served
model has its own decode loop and rows), so with several workers on one Redis a request waits in
the channel until some worker has room and goes to that one, rather than queueing behind a busy
worker while another is idle. The quick channels (tokenizing, inspecting, scoring: no decode slot
needed) are read all the time. ``runworker inference`` reads the channel pair of every model this
worker serves (``PLAYGROUND_MODELS``; ``channel_messages.model_channel``) and no other, so it never
takes a request for a model it does not serve. Each request taken off a shared channel is
announced to the waiting line (``playground.edge.waiting_line``).
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
from playground.wire.channel_messages import INFERENCE_CHANNEL, LINE_GROUP, REQUEST

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
    """How many generations of each model this worker holds, against the room it has per model:
    ``MAX_BATCH`` rows decoding plus ``INTAKE_BACKLOG`` taken in advance. The intake waits for that
    model's room before it reads the model's shared channel."""

    def __init__(self) -> None:
        self.held: dict[tuple[str, str], str | None] = {}  # (reply channel, request id) → its model (None: default)
        self._changed = asyncio.Event()
        self.freeing = FreeingRate()  # the line's pace, told to waiting connections
        self.name = secrets.token_hex(6)  # names this worker's rate in the line's messages

    def take(self, message: dict[str, Any]) -> None:
        if message.get("type") == REQUEST:
            self.held[(message["reply_channel"], message["request_id"])] = message.get("model")

    def release(self, key: tuple[str, str]) -> None:
        if key in self.held:
            del self.held[key]
            self.freeing.freed()
        self._changed.set()

    def holding(self, channel: str) -> int:
        """Generations held that came off ``channel`` (one model's)."""
        return sum(1 for model in self.held.values() if channel_messages.model_channel(model, False) == channel)

    @property
    def room(self) -> int:
        config = settings.INFERENCE
        return int(config["MAX_BATCH"]) + int(config["INTAKE_BACKLOG"])

    async def wait_for_room(self, channel: str = INFERENCE_CHANNEL) -> None:
        while self.holding(channel) >= self.room:
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
        self.generation_channels: set[str] = set()
        if INFERENCE_CHANNEL in channels:  # `runworker inference`: every served model's pair, no other
            channels.remove(INFERENCE_CHANNEL)
            models = settings.INFERENCE["MODELS"]
            self.generation_channels = {channel_messages.model_channel(model, False) for model in models}
            quick = [channel_messages.model_channel(model, True) for model in models]
            channels += [c for c in [*sorted(self.generation_channels), *quick] if c not in channels]
        super().__init__(application, channels, channel_layer, **kwargs)

    async def listener(self, channel: str) -> None:
        gate = intake_gate()
        # every model's jobs go to the inference channel's instance: one worker, one set of held jobs
        served = INFERENCE_CHANNEL if self.generation_channels else channel
        generations = channel in self.generation_channels
        while True:
            if generations:
                await gate.wait_for_room(channel)
            message = await self.channel_layer.receive(channel)
            if not message.get("type", None):
                raise ValueError("Worker received message with no type.")
            if generations:
                if not message.get("quick"):
                    gate.take(message)
                await self._announce_taken(message, gate, channel)  # the line moved (a request, ping or cancel left it)
            instance_queue = self.get_or_create_application_instance(served, {"type": "channel", "channel": served})
            await instance_queue.put(message)

    async def _announce_taken(self, message: dict[str, Any], gate: IntakeGate, channel: str) -> None:
        taken = channel_messages.taken(message.get("ticket"), gate.freeing.per_second(), gate.name, channel)
        try:
            await self.channel_layer.group_send(LINE_GROUP, taken)
        except Exception as error:  # noqa: BLE001 — the line's positions are a courtesy; serving goes on
            log.warning("could not tell the waiting line: %s", error)
