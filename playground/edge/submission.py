"""One front door's requests to the inference workers, over the channel layer: the request side of
the worker protocol, written once (docs in ``playground.wire.channel_messages``).

Both front doors drive a ``Submissions`` and only translate shapes: the websocket consumer keeps one
per connection (its channel), the HTTP API one per request (``openai_api.worker_call``, a channel of
its own). It owns, per request:

- admission: the request id is not already running, the connection's ``MAX_REQUESTS_PER_CONNECTION``,
  the client address's limits (``client_limits``), the waiting line's length (``waiting_line``);
  a refused request gets its refusal back (an ``error`` event), nothing is sent;
- the lease (``watchdog.Watchdog``), the send to the shared channel, and the line's ``queued``
  events while a generation waits for a worker's room;
- the worker's replies: the first worker that acknowledges a request keeps it, another is told to
  cancel and not listened to; every event is passed to ``deliver``, and the request's last one frees
  its id and its client slot;
- cancels, by the one rule of ``watchdog.send_cancel``: ``cancel()`` (the client asks while it
  still listens) goes to the worker once it has acknowledged the request (a request no worker
  acknowledged yet is cancelled when one does); ``close()`` (the front door goes away) cancels every
  request that has not ended, on its worker or, before any acknowledged it, through its shared
  channel and the workers' group, since no acknowledgement will be read any more; those cancels say
  the front door has gone (``closed``), so no worker sends this channel anything more, and nothing
  that still arrives is passed on or judged (the watchdog stops for good). A cancel that
  crossed the request's end on its way is answered with ``unknown_request`` after that end, as the
  cancel of a finished request is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from channels.exceptions import ChannelFull
from django.conf import settings

from playground.edge import metrics, waiting_line
from playground.edge.client_limits import client_limits
from playground.edge.watchdog import BUSY, BUSY_RETRY_AFTER_SECONDS, Watchdog, send_cancel
from playground.runs.request_fields import record_fields
from playground.wire import channel_messages, events
from playground.wire.channel_messages import EVENT, FINISHED, HEARTBEAT, LINE_GROUP, QUEUED, TAKEN
from playground.wire.jobs import Generate, Job

log = logging.getLogger(__name__)

# A generation first in line that no worker took within this is waiting for room: it hears `queued`.
FIRST_IN_LINE_GRACE_SECONDS = 0.5

Deliver = Callable[[dict[str, Any] | events.Frame], Awaitable[None]]  # a token event comes already encoded


@dataclass
class Submitted:
    """A request that has not ended, as its front door knows it."""

    shared_channel: str  # where it waits for a worker: ``inference`` or ``inference-quick``
    worker_channel: str | None = None  # the worker that acknowledged it, where cancels go


class Submissions:
    """The requests one reply channel sends to the workers, and their replies (see the module)."""

    def __init__(self, layer: Any, reply_channel: str, client: str, deliver: Deliver) -> None:
        self.layer = layer
        self.reply_channel = reply_channel
        self.client = client  # the key of the per-client limits (its address)
        self.deliver = deliver  # the front door's: every websocket event for its client
        self.requests: dict[str, Submitted] = {}
        self.cancel_asked: set[str] = set()  # cancels waiting for a worker to acknowledge the request
        self.cancel_sent: set[str] = set()  # cancels passed to a worker, until the request ends
        self.line = waiting_line.Line()  # this channel's generations waiting for a worker's room
        self.in_line_group = False
        self.closed = False
        self._line_checks: set[asyncio.Future[None]] = set()
        self.watchdog = Watchdog(layer, reply_channel, self._on_event, resubmitted=self._worker_lost_before_start)

    async def submit(self, job: Job) -> dict[str, Any] | None:
        """Sends the job to the workers; its refusal (an ``error`` event) instead when it is not admitted."""
        request_id = job.request_id
        refusal = self._refusal(job)
        if refusal is not None:
            return refusal
        message = channel_messages.request(job, self.reply_channel)
        shared_channel = channel_messages.channel_for(message)
        self.requests[request_id] = Submitted(shared_channel)
        metrics.request_submitted(self.reply_channel, job)
        record = record_fields(job) if isinstance(job, Generate) else None
        message = self.watchdog.submitted(request_id, record, message)  # liveness: a lease
        try:
            await self.watchdog.note_epoch()  # a restart of the layer after this send is noticed
            ahead = None if message["quick"] else await self._join_line(request_id, message["ticket"], shared_channel)
            if waiting_line.is_full(ahead):
                raise ChannelFull(shared_channel)
            await self.layer.send(shared_channel, message)
        except Exception as error:  # noqa: BLE001 — refused, not hung: a full line, or a layer that cannot be reached
            self.watchdog.forget(request_id)
            self._forget(request_id)
            why = (
                "every inference worker is busy and the waiting line is full"
                if isinstance(error, ChannelFull)
                else "the channel layer cannot be reached (Redis restarting?)"
            )
            if not isinstance(error, ChannelFull):
                log.warning("request %s of %s refused: %s: %s", request_id, self.reply_channel, type(error).__name__, error)
            return events.limit_event(BUSY, f"{why}; try again shortly", BUSY_RETRY_AFTER_SECONDS, request_id)
        if ahead:  # others wait before it: it surely waits too
            await self.deliver(self.line.event(request_id))
        elif ahead == 0:  # first in line: it waits only if every worker is full, which shows soon
            check = asyncio.ensure_future(self._queued_if_still_waiting(request_id))
            self._line_checks.add(check)
            check.add_done_callback(self._line_checks.discard)
        return None

    def _refusal(self, job: Job) -> dict[str, Any] | None:
        request_id = job.request_id
        if request_id in self.requests:
            return events.error_event("duplicate_request", f"request {request_id!r} is still running", "request_id", request_id)
        limit = settings.INFERENCE["MAX_REQUESTS_PER_CONNECTION"]
        if len(self.requests) >= limit:
            message = f"at most {limit} requests may run or wait per connection"
            return events.error_event("too_many_requests", message, None, request_id)
        refused = client_limits().admit(self.client)
        if refused is not None:
            return events.limit_event(refused.code, refused.message, refused.retry_after, request_id)
        return None

    async def cancel(self, request_id: str) -> None:
        """The client asks to cancel a request while it still listens."""
        submitted = self.requests.get(request_id)
        if submitted is None:
            await self.deliver(events.unknown_request_event(request_id))
        elif submitted.worker_channel is None:
            self.cancel_asked.add(request_id)  # sent once a worker acknowledges it
        else:
            await self._cancel(request_id, submitted)

    async def close(self) -> None:
        """The front door goes away: every request that has not ended is cancelled (a waiting one
        leaves its worker's queue unrun). Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        for check in list(self._line_checks):
            check.cancel()
        self.watchdog.stop()  # liveness: a closed connection's requests are cancelled, never resubmitted
        for request_id, submitted in list(self.requests.items()):
            self._forget(request_id)
            await send_cancel(
                self.layer, request_id, self.reply_channel, submitted.worker_channel, submitted.shared_channel, closed=True
            )
        if self.in_line_group:
            await self.layer.group_discard(LINE_GROUP, self.reply_channel)
        metrics.connection_closed(self.reply_channel)

    async def handle(self, message: dict[str, Any]) -> None:
        """A channel-layer message to this reply channel (from a worker, or the line's group); after
        ``close`` nothing is read (its requests were cancelled)."""
        if self.closed:
            return
        kind = message.get("type")
        if kind == QUEUED:
            await self._on_queued(message)
        elif kind == EVENT:
            await self._on_event(message)
        elif kind == FINISHED:
            self._on_finished(message)
        elif kind == HEARTBEAT:
            self.watchdog.heartbeat(message)  # liveness: a worker still holds these requests
        elif kind == TAKEN:
            for request_id in self.line.taken(message):  # a worker took a request: the line moved
                await self.deliver(self.line.event(request_id))

    async def _join_line(self, request_id: str, ticket: float, channel: str) -> int | None:
        """Joins the waiting line's group (again with each generation: a restarted Redis has no
        groups) and takes the request's place in its model's line (``channel``): the requests in
        that channel now are ahead of it. None when the layer cannot count them (no positions then)."""
        await self.layer.group_add(LINE_GROUP, self.reply_channel)
        self.in_line_group = True
        ahead = await waiting_line.requests_in_line(self.layer, channel)
        if ahead is not None:
            self.line.join(request_id, ticket, ahead, channel)
        return ahead

    async def _queued_if_still_waiting(self, request_id: str) -> None:
        await asyncio.sleep(FIRST_IN_LINE_GRACE_SECONDS)
        if request_id in self.line.places:
            await self.deliver(self.line.event(request_id))

    async def _cancel(self, request_id: str, submitted: Submitted) -> None:
        self.cancel_sent.add(request_id)
        await send_cancel(self.layer, request_id, self.reply_channel, submitted.worker_channel, submitted.shared_channel)

    async def _on_queued(self, message: dict[str, Any]) -> None:
        """A worker acknowledged the request; a cancel asked for meanwhile goes to it now."""
        request_id = message["request_id"]
        submitted = self.requests.get(request_id)
        if submitted is None:
            return
        if channel_messages.from_another_worker(message, submitted.worker_channel):
            # taken twice by the Redis layer: the first worker keeps it, the other lets it go
            await self.layer.send(message["worker_channel"], channel_messages.cancel(request_id, self.reply_channel))
            return
        if not self.watchdog.accepts(message):  # liveness: from a submission given up since
            return
        self.line.leave(request_id)  # a worker has it: out of the line
        submitted.worker_channel = message["worker_channel"]
        if request_id in self.cancel_asked:
            self.cancel_asked.discard(request_id)
            await self._cancel(request_id, submitted)

    async def _on_event(self, message: dict[str, Any]) -> None:
        """A worker's event (or the watchdog's ``worker_lost``, ``no_worker`` or ``busy``), passed on;
        a request's last event frees its id."""
        request_id = message["request_id"]
        if self._from_another_worker(message) or not self.watchdog.accepts(message):
            return
        event = channel_messages.event_of(message)
        if isinstance(event, events.Frame) or event.get("type") not in events.FINAL_EVENTS:  # (a Frame never ends a request)
            await self.deliver(event)
            return
        crossed = request_id in self.cancel_sent and not events.ended_by_cancel(event)
        self._forget(request_id)
        await self.deliver(event)
        if crossed:
            await self.deliver(events.unknown_request_event(request_id))

    def _on_finished(self, message: dict[str, Any]) -> None:
        """The worker is done with the request (even one whose last event was lost): its id is free."""
        if self._from_another_worker(message) or not self.watchdog.accepts(message):
            return
        self._forget(message["request_id"])

    def _from_another_worker(self, message: dict[str, Any]) -> bool:
        submitted = self.requests.get(message["request_id"])
        return channel_messages.from_another_worker(message, None if submitted is None else submitted.worker_channel)

    def _worker_lost_before_start(self, request_id: str) -> None:
        """The watchdog sent the request to the shared channel again: no worker holds it now."""
        submitted = self.requests.get(request_id)
        if submitted is not None:
            submitted.worker_channel = None

    def _forget(self, request_id: str) -> None:
        """The request has ended for this front door: its id and its client slot are free."""
        if self.requests.pop(request_id, None) is not None:
            client_limits().release(self.client)
        self.line.leave(request_id)
        self.cancel_asked.discard(request_id)
        self.cancel_sent.discard(request_id)
