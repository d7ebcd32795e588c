"""The ``/ws/generate/`` websocket: checks each frame, hands requests to a worker, relays its events.

The consumer never touches the model. It speaks to inference workers only through the channel
layer (see ``playground.worker``), so workers may live in this process or on other machines.
Every frame gets its answer or a structured ``error``; no reply grows past ``events.MAX_REPLY_BYTES``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.exceptions import ChannelFull
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from playground import channel_messages as messages
from playground import events, frames, metrics, waiting_line
from playground.client_limits import client_limits
from playground.liveness import BUSY, BUSY_RETRY_AFTER_SECONDS, Watchdog
from playground.worker import INFERENCE_CHANNEL, QUICK_CHANNEL, WORKERS_GROUP, ensure_embedded_worker

log = logging.getLogger(__name__)

# A generation first in line that no worker took within this is waiting for room: it hears `queued`.
FIRST_IN_LINE_GRACE_SECONDS = 0.5


class GenerateConsumer(AsyncWebsocketConsumer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.line = waiting_line.Line()  # this connection's generations waiting for a worker's room
        self.in_line_group = False
        self._line_checks: set[asyncio.Future[None]] = set()

    async def connect(self) -> None:
        ensure_embedded_worker()
        # request_id → the worker channel serving it (None until the worker has queued it)
        self.requests: dict[str, str | None] = {}
        self.cancel_asked: set[str] = set()  # cancels waiting for the worker to say where it is
        self.cancel_sent: set[str] = set()  # cancels passed to a worker, until the request ends
        client = self.scope.get("client")
        self.client = str(client[0]) if client else "unknown"  # the key of the per-client limits
        self.watchdog = Watchdog(  # liveness
            self.channel_layer, self.channel_name, self.inference_event, resubmitted=self._worker_lost_before_start
        )
        await self.accept()

    async def disconnect(self, code: int) -> None:
        """Closing the socket cancels every request it started: a waiting one leaves its worker's
        queue unrun. A request no worker has taken yet is cancelled through the ``inference``
        channel (behind the request itself) and the workers' group, since no ``inference.queued``
        will reach this consumer any more."""
        for check in list(self._line_checks):
            check.cancel()
        if self.in_line_group:
            await self.channel_layer.group_discard(waiting_line.LINE_GROUP, self.channel_name)
        shared_channels: dict[str, str] = {}
        if hasattr(self, "watchdog"):
            shared_channels = self.watchdog.channels()
            self.watchdog.stop()  # liveness
        for request_id, worker_channel in list(getattr(self, "requests", {}).items()):
            self._forget(request_id)
            if worker_channel is not None:
                await self._cancel(request_id, worker_channel)
                continue
            cancel = messages.cancel(request_id, self.channel_name)
            try:
                await self.channel_layer.send(shared_channels.get(request_id, INFERENCE_CHANNEL), cancel)
            except ChannelFull:  # the workers' group below still reaches every worker that took it
                log.warning("the inference channel is full; cancel of %s sent to the workers' group only", request_id)
            await self.channel_layer.group_send(WORKERS_GROUP, cancel)
        metrics.connection_closed(self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None:
            await self._send(events.error_event("binary_frame", "binary frames are not understood; send JSON text frames"))
            return
        try:
            command = frames.parse_client_frame(text_data)
        except frames.ProtocolError as error:
            await self._send(error.to_event())
            return
        except Exception as error:  # noqa: BLE001 — a frame must never take the connection down
            log.exception("could not read a frame")
            await self._send(events.error_event("invalid_value", f"the frame could not be read: {type(error).__name__}"))
            return
        if isinstance(command, frames.Cancel):
            await self._cancel_requested(command.request_id)
        else:
            await self._submit(command)

    async def _submit(self, command: frames.Job) -> None:
        request_id = command.request_id
        if request_id in self.requests:
            await self._send(
                events.error_event("duplicate_request", f"request {request_id!r} is still running", "request_id", request_id)
            )
            return
        limit = settings.INFERENCE["MAX_REQUESTS_PER_CONNECTION"]
        if len(self.requests) >= limit:
            await self._send(
                events.error_event(
                    "too_many_requests", f"at most {limit} requests may run or wait per connection", None, request_id
                )
            )
            return
        refusal = client_limits().admit(self.client)
        if refusal is not None:
            await self._send(events.limit_event(refusal.code, refusal.message, refusal.retry_after, request_id))
            return
        self.requests[request_id] = None
        metrics.request_submitted(self.channel_name, command)
        record = frames.record_fields(command) if isinstance(command, frames.Generate) else None
        message = self.watchdog.submitted(request_id, record, messages.request(command, self.channel_name))  # liveness: a lease
        if message["quick"]:  # needs no decode slot: never in the line
            channel, ahead = QUICK_CHANNEL, None
        else:
            channel, ahead = INFERENCE_CHANNEL, await self._join_line(request_id, message["ticket"])
        try:
            if waiting_line.is_full(ahead):
                raise ChannelFull(INFERENCE_CHANNEL)
            await self.channel_layer.send(channel, message)
        except ChannelFull:  # every worker is full and so is the line waiting for them: refused, not hung
            busy = events.limit_event(
                BUSY,
                "every inference worker is busy and the waiting line is full; try again shortly",
                BUSY_RETRY_AFTER_SECONDS,
                request_id,
            )
            await self.inference_event(messages.event(request_id, busy, message.get("lease")))
            return
        if ahead:  # others wait before it: it surely waits too
            await self._send(self.line.event(request_id))
        elif ahead == 0:  # first in line: it waits only if every worker is full, which shows soon
            check = asyncio.ensure_future(self._queued_if_still_waiting(request_id))
            self._line_checks.add(check)
            check.add_done_callback(self._line_checks.discard)

    async def _join_line(self, request_id: str, ticket: float) -> int | None:
        """Joins the waiting line's group (once) and takes the request's place: the requests in the
        channel now are ahead of it. None when the layer cannot count them (no positions then)."""
        if not self.in_line_group:
            await self.channel_layer.group_add(waiting_line.LINE_GROUP, self.channel_name)
            self.in_line_group = True
        ahead = await waiting_line.requests_in_line(self.channel_layer)
        if ahead is not None:
            self.line.join(request_id, ticket, ahead)
        return ahead

    async def _queued_if_still_waiting(self, request_id: str) -> None:
        await asyncio.sleep(FIRST_IN_LINE_GRACE_SECONDS)
        if request_id in self.line.places:
            await self._send(self.line.event(request_id))

    async def inference_taken(self, message: dict[str, Any]) -> None:
        """A worker took a request off the shared channel: the line moved (see waiting_line)."""
        for request_id in self.line.taken(message):
            await self._send(self.line.event(request_id))

    async def _cancel_requested(self, request_id: str) -> None:
        if request_id not in self.requests:
            await self._send(events.unknown_request_event(request_id))
            return
        worker_channel = self.requests[request_id]
        if worker_channel is None:
            self.cancel_asked.add(request_id)  # sent once the worker says where
            return
        await self._cancel(request_id, worker_channel)

    async def _cancel(self, request_id: str, worker_channel: str) -> None:
        self.cancel_sent.add(request_id)
        await self.channel_layer.send(worker_channel, messages.cancel(request_id, self.channel_name))

    async def inference_queued(self, message: dict[str, Any]) -> None:
        """A worker took the request; a cancel asked for meanwhile goes to it now."""
        request_id = message["request_id"]
        if request_id not in self.requests:
            return
        if messages.from_another_worker(message, self.requests[request_id]):
            # taken twice by the Redis layer: the first worker keeps it, the other lets it go
            await self.channel_layer.send(message["worker_channel"], messages.cancel(request_id, self.channel_name))
            return
        if not self.watchdog.accepts(message):  # liveness
            return
        self.line.leave(request_id)  # a worker has it: out of the line
        self.requests[request_id] = message["worker_channel"]
        if request_id in self.cancel_asked:
            self.cancel_asked.discard(request_id)
            await self._cancel(request_id, message["worker_channel"])

    async def inference_event(self, message: dict[str, Any]) -> None:
        """Passes a worker's event on to the client; a request's last event frees its id. A cancel
        that crossed the request's end on its way (the request ended otherwise) is answered with
        ``unknown_request`` right after that last event, as a cancel of a finished request is."""
        if messages.from_another_worker(message, self.requests.get(message["request_id"])):
            return  # a second worker's copy of the request (see channel_messages)
        if not self.watchdog.accepts(message):  # liveness: from a submission given up since
            return
        event = message["event"]
        request_id = message["request_id"]
        if event.get("type") not in events.FINAL_EVENTS:
            await self._send(event)
            return
        crossed = request_id in self.cancel_sent and not events.ended_by_cancel(event)
        self._forget(request_id)
        await self._send(event)
        if crossed:
            await self._send(events.unknown_request_event(request_id))

    async def inference_finished(self, message: dict[str, Any]) -> None:
        """The worker is done with the request (even one whose last event was lost): its id is free."""
        if messages.from_another_worker(message, self.requests.get(message["request_id"])):
            return
        if not self.watchdog.accepts(message):  # liveness: from a submission given up since
            return
        self._forget(message["request_id"])

    def _worker_lost_before_start(self, request_id: str) -> None:
        """The watchdog sent the request to the shared channel again: no worker holds it now."""
        if request_id in self.requests:
            self.requests[request_id] = None

    def _forget(self, request_id: str) -> None:
        """The request has ended for this connection: its id and its client slot are free."""
        if self.requests.pop(request_id, _GONE) is not _GONE:
            client_limits().release(self.client)
        self.line.leave(request_id)
        self.cancel_asked.discard(request_id)
        self.cancel_sent.discard(request_id)

    async def inference_heartbeat(self, message: dict[str, Any]) -> None:
        """A worker still holds these requests (see playground/liveness.py)."""
        self.watchdog.heartbeat(message)

    async def _send(self, event: dict[str, Any]) -> None:
        metrics.event_sent(self.channel_name, event)
        await self.send(text_data=events.encode_event(event))


_GONE = object()
