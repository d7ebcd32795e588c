"""One HTTP request's round trip to an inference worker, over the channel layer as the websocket's.

The request goes out as ``channel_messages.request`` on the ``inference`` channel (a prompt's
``score``, a quick job, on ``inference-quick``) from a channel of
its own; the worker's ``queued``, ``event`` and ``finished`` come back to it. A ``Watchdog`` (the
websocket's, ``playground.liveness``) watches the lease, so a lost worker ends the call with
``worker_lost`` and an untaken request with ``no_worker`` instead of a hang. ``close()`` cancels a
request that has not ended (the HTTP client went away), on its worker or, before any took it,
through the ``inference`` channel and the workers' group as a closing websocket does.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import AsyncIterator
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

from playground import channel_messages as messages
from playground import frames, metrics, waiting_line
from playground.client_limits import client_limits
from playground.events import FINAL_EVENTS
from playground.liveness import BUSY, BUSY_RETRY_AFTER_SECONDS, Watchdog
from playground.openai_api.errors import ApiError
from playground.worker import WORKERS_GROUP, ensure_embedded_worker

log = logging.getLogger(__name__)


class WorkerCall:
    """Submits one job (a generate, or the prompt's ``score``) and yields its events, ending with its
    last (``done``, ``prompt_scores`` or ``error``)."""

    def __init__(self, job: frames.Job, client: str) -> None:
        self.job = job
        self.client = client
        self.layer = get_channel_layer()
        self.channel: str | None = None
        self.worker_channel: str | None = None
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.ended = False  # the request's last event has arrived
        self._admitted = False
        self._reader: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.watchdog: Watchdog | None = None

    async def submit(self) -> None:
        """Sends the request; ``ApiError`` 429 when the client is over its limits, the waiting line
        is full (``PLAYGROUND_MAX_WAITING``) or the channel is full."""
        # In a fresh context: the worker outlives this request, whose context (asgiref's executor for
        # the request's sync calls) is shut down when the request ends.
        contextvars.Context().run(ensure_embedded_worker)
        refusal = client_limits().admit(self.client)
        if refusal is not None:
            raise ApiError(429, refusal.message, None, refusal.code, "rate_limit_error", refusal.retry_after)
        self._admitted = True
        if not messages.is_quick(self.job):
            ahead = await waiting_line.requests_in_line(self.layer)
            if waiting_line.is_full(ahead):
                raise ApiError(
                    429,
                    f"every inference worker is busy and {ahead} requests are waiting; retry shortly",
                    None,
                    BUSY,
                    "rate_limit_error",
                    BUSY_RETRY_AFTER_SECONDS,
                )
        self._loop = asyncio.get_running_loop()
        self.channel = await self.layer.new_channel("openai.")
        self.watchdog = Watchdog(self.layer, self.channel, self._on_event, resubmitted=self._worker_lost_before_start)
        request = messages.request(self.job, self.channel)
        record = frames.record_fields(self.job) if isinstance(self.job, frames.Generate) else None
        # The watchdog's task saves a lost run through the database: it must not inherit this
        # request's context, whose executor for sync calls asgiref shuts down with the view.
        message = contextvars.Context().run(self.watchdog.submitted, self.job.request_id, record, request)
        try:
            await self.layer.send(messages.channel_for(message), message)
        except ChannelFull:
            self.watchdog.stop()
            raise ApiError(429, "the inference queue is full; retry shortly", None, "queue_full", "rate_limit_error", 1) from None
        metrics.request_submitted(self.channel, self.job)  # counted with the websocket's requests
        self._reader = contextvars.Context().run(asyncio.ensure_future, self._read())

    async def next_event(self) -> dict[str, Any]:
        return await self.events.get()

    async def stream(self) -> AsyncIterator[dict[str, Any]]:
        """The events from here to the request's last."""
        while True:
            event = await self.events.get()
            yield event
            if event.get("type") in FINAL_EVENTS:
                return

    async def close(self) -> None:
        """Frees the request: cancels it on its worker unless it has ended. Safe to call twice."""
        if self.watchdog is not None:
            self.watchdog.stop()
        if self._admitted:
            self._admitted = False
            client_limits().release(self.client)
        if not self.ended and self.channel is not None:
            self.ended = True
            await asyncio.shield(self._cancel())
        if self._reader is not None:
            self._reader.cancel()
        if self.channel is not None:
            metrics.connection_closed(self.channel)

    def close_soon(self) -> None:
        """``close()`` from outside a coroutine (a finalizer): scheduled on the call's event loop."""
        if self._loop is None or (self.ended and not self._admitted):
            return
        try:
            self._loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.close()))
        except RuntimeError:  # the loop has closed (shutdown): nothing left to free
            pass

    async def _cancel(self) -> None:
        cancel = messages.cancel(self.job.request_id, self.channel or "")
        try:
            if self.worker_channel is not None:
                await self.layer.send(self.worker_channel, cancel)
            else:
                await self.layer.send(messages.job_channel(self.job), cancel)
                await self.layer.group_send(WORKERS_GROUP, cancel)
        except Exception as error:  # noqa: BLE001 — nothing more to do for a client that left
            log.warning("could not cancel request %s: %s", self.job.request_id, error)

    def _worker_lost_before_start(self, request_id: str) -> None:
        self.worker_channel = None  # resubmitted by the watchdog: the next worker to take it serves it

    async def _read(self) -> None:
        assert self.channel is not None and self.watchdog is not None
        while True:
            message = await self.layer.receive(self.channel)
            kind = message.get("type")
            try:
                if kind == "inference.heartbeat":
                    self.watchdog.heartbeat(message)
                elif kind == "inference.queued":
                    await self._on_queued(message)
                elif kind == "inference.event":
                    await self._on_event(message)
                elif kind == "inference.finished" and not messages.from_another_worker(message, self.worker_channel):
                    self.watchdog.accepts(message)
            except Exception:  # noqa: BLE001 — one odd message must not end the call
                log.exception("could not handle a %s message of request %s", kind, self.job.request_id)

    async def _on_queued(self, message: dict[str, Any]) -> None:
        if messages.from_another_worker(message, self.worker_channel):
            # taken twice by the Redis layer: the first worker keeps it (see channel_messages)
            await self.layer.send(message["worker_channel"], messages.cancel(self.job.request_id, self.channel or ""))
            return
        if self.watchdog is not None and self.watchdog.accepts(message):
            self.worker_channel = message["worker_channel"]

    async def _on_event(self, message: dict[str, Any]) -> None:
        """A worker's event, or the watchdog's ``worker_lost``/``no_worker`` error."""
        if messages.from_another_worker(message, self.worker_channel):
            return
        if self.watchdog is not None and not self.watchdog.accepts(message):
            return
        event = message["event"]
        metrics.event_sent(self.channel or "", event)
        if event.get("type") in FINAL_EVENTS:
            self.ended = True
        await self.events.put(event)
