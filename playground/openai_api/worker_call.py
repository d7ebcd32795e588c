"""One HTTP request's round trip to an inference worker: the HTTP API's front door to the
channel-layer protocol the websocket uses, through the same ``Submissions``
(``playground.edge.submission``) on a channel of its own.

``WorkerCall`` only translates shapes: a refusal becomes an ``ApiError`` (429 for the limits and a
full line), the events arrive in a queue for the views, and the waiting line's ``queued`` events
are not passed on (the streamed answer's keep-alive comments stand for them, ``views``).
``close()`` gives the request up (the HTTP client went away): ``Submissions.close`` cancels it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import AsyncIterator
from typing import Any

from channels.layers import get_channel_layer

from playground.edge import metrics
from playground.edge.submission import Submissions
from playground.openai_api.errors import from_event
from playground.wire import embedded
from playground.wire.events import FINAL_EVENTS, Frame, event_type
from playground.wire.jobs import Job

log = logging.getLogger(__name__)


class WorkerCall:
    """Submits one job (a generate, or the prompt's ``score``) and yields its events, ending with its
    last (``done``, ``prompt_scores`` or ``error``)."""

    def __init__(self, job: Job, client: str) -> None:
        self.job = job
        self.client = client
        self.layer = get_channel_layer()
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.submissions: Submissions | None = None
        self._reader: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def submit(self) -> None:
        """Sends the request; ``ApiError`` when it is refused (429 when the client is over its
        limits, the waiting line is full (``PLAYGROUND_MAX_WAITING``) or the channel is full)."""
        embedded.ensure_worker()
        self._loop = asyncio.get_running_loop()
        channel = (
            await self.layer.new_channel()
        )  # the process-local prefix every receiver of this layer shares (see channel_layer)
        self.submissions = Submissions(self.layer, channel, self.client, self._deliver)
        # In a fresh context: the watchdog's and the reader's tasks outlive this request's context
        # (asgiref's executor for its sync calls, which saves a lost run, is shut down with the view).
        fresh = contextvars.Context()
        self._reader = fresh.run(asyncio.ensure_future, self._read(self.submissions))
        refusal = await fresh.run(asyncio.ensure_future, self.submissions.submit(self.job))
        if refusal is not None:
            raise from_event(refusal)

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
        if self.submissions is not None:
            await asyncio.shield(self.submissions.close())
        if self._reader is not None:
            self._reader.cancel()

    def close_soon(self) -> None:
        """``close()`` from outside a coroutine (a finalizer): scheduled on the call's event loop."""
        if self._loop is None or self.submissions is None or self.submissions.closed:
            return
        try:
            self._loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self.close()))
        except RuntimeError:  # the loop has closed (shutdown): nothing left to free
            pass

    async def _deliver(self, event: dict[str, Any] | Frame) -> None:
        if event_type(event) in ("queued", "loading"):
            return  # the line's place and a model's load have no shape in OpenAI's answers (the load is in timing)
        assert self.submissions is not None
        metrics.event_sent(self.submissions.reply_channel, event)
        # a token the worker encoded for websockets: its fields, to translate
        await self.events.put(event.event() if isinstance(event, Frame) else event)

    async def _read(self, submissions: Submissions) -> None:
        while True:
            message = await self.layer.receive(submissions.reply_channel)
            try:
                await submissions.handle(message)
            except Exception:  # noqa: BLE001 — one odd message must not end the call
                log.exception("could not handle a %s message of request %s", message.get("type"), self.job.request_id)
