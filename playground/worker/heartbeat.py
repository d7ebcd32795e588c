"""The worker's half of liveness (``playground.wire.liveness``): while a worker holds requests it
sends each of their reply channels an ``inference.heartbeat`` every ``HEARTBEAT_SECONDS``, naming the
``[request_id, lease]`` pairs it holds for that channel."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from playground.wire import channel_messages
from playground.wire.liveness import Timing

log = logging.getLogger(__name__)


class HeldRequest(Protocol):
    """What a worker knows of a request it holds (``playground.worker.serving.Assignment`` is one)."""

    request_id: str
    reply_channel: str
    lease: str | None


def heartbeats(worker_channel: str, held: Iterable[HeldRequest], models: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """reply channel → the heartbeat message naming the requests this worker holds for it (and the
    models it serves)."""
    messages: dict[str, dict[str, Any]] = {}
    for request in held:
        if request.lease is None:  # from a connection that does not watch
            continue
        message = messages.setdefault(request.reply_channel, channel_messages.heartbeat(worker_channel, [], models))
        message["leases"].append([request.request_id, request.lease])
    return messages


class WorkerHeartbeat:
    """Beats for a worker while it holds requests; stops when it holds none, starts on the next."""

    def __init__(self, held: Callable[[], Iterable[HeldRequest]], models: list[str] | None = None) -> None:
        self._held = held
        self._models = list(models or [])  # the ids this worker serves, named in every heartbeat
        self._task: asyncio.Future[None] | None = None

    def ensure_running(self, channel_layer: Any, worker_channel: str) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._beat(channel_layer, worker_channel, Timing.from_settings()))

    async def _beat(self, channel_layer: Any, worker_channel: str, timing: Timing) -> None:
        while True:
            await asyncio.sleep(timing.heartbeat_seconds)
            messages = heartbeats(worker_channel, list(self._held()), self._models)
            if not messages:
                return
            for reply_channel, message in messages.items():
                try:
                    await channel_layer.send(reply_channel, message)
                except Exception as error:  # noqa: BLE001 — a full or gone connection; the others still hear
                    log.warning("could not send a heartbeat to %s: %s", reply_channel, error)
