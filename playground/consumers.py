"""The ``/ws/generate/`` websocket: checks each frame, hands requests to a worker, relays its events.

The consumer never touches the model. It speaks to inference workers only through the channel
layer (see ``playground.worker``), so workers may live in this process or on other machines.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from playground import metrics, protocol
from playground.worker import INFERENCE_CHANNEL, WORKERS_GROUP, ensure_embedded_worker

log = logging.getLogger(__name__)


class GenerateConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        ensure_embedded_worker()
        # request_id → the worker channel serving it (None until the worker has queued it)
        self.requests: dict[str, str | None] = {}
        self.cancel_asked: set[str] = set()
        await self.accept()

    async def disconnect(self, code: int) -> None:
        """Closing the socket cancels every request it started. A request no worker has taken yet
        is cancelled through the ``inference`` channel (behind the request itself) and the workers'
        group, since no ``inference.queued`` will reach this consumer any more."""
        for request_id, worker_channel in list(self.requests.items()):
            if worker_channel is not None:
                await self._cancel(request_id)
                continue
            cancel = {"type": "inference.cancel", "request_id": request_id, "reply_channel": self.channel_name}
            await self.channel_layer.send(INFERENCE_CHANNEL, cancel)
            await self.channel_layer.group_send(WORKERS_GROUP, cancel)
        metrics.connection_closed(self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None:
            await self._send(protocol.error_event("binary_frame", "binary frames are not understood; send JSON text frames"))
            return
        try:
            command = protocol.parse_client_frame(text_data)
        except protocol.ProtocolError as error:
            await self._send(error.to_event())
            return
        except Exception as error:  # noqa: BLE001 — a frame must never take the connection down
            log.exception("could not read a frame")
            await self._send(protocol.error_event("invalid_value", f"the frame could not be read: {error}"))
            return
        if isinstance(command, protocol.Cancel):
            await self._cancel_requested(command.request_id)
        else:
            await self._submit(command, text_data)

    async def _submit(self, command: protocol.Job, frame: str) -> None:
        if command.request_id in self.requests:
            await self._send(protocol.error_event(
                "duplicate_request", f"request {command.request_id!r} is still running", "request_id", command.request_id
            ))
            return
        limit = settings.INFERENCE["MAX_REQUESTS_PER_CONNECTION"]
        if len(self.requests) >= limit:
            await self._send(protocol.error_event(
                "too_many_requests", f"at most {limit} requests may run or wait per connection", None, command.request_id
            ))
            return
        self.requests[command.request_id] = None
        metrics.request_submitted(self.channel_name, command)
        await self.channel_layer.send(INFERENCE_CHANNEL, protocol.job_message(frame, command, self.channel_name))

    async def _cancel_requested(self, request_id: str) -> None:
        if request_id not in self.requests:
            await self._send(protocol.error_event(
                "unknown_request", f"no running request has request_id {request_id!r}", "request_id", request_id
            ))
            return
        await self._cancel(request_id)

    async def _cancel(self, request_id: str) -> None:
        worker_channel = self.requests.get(request_id)
        if worker_channel is None:
            self.cancel_asked.add(request_id)  # sent once the worker says where
            return
        await self.channel_layer.send(worker_channel, {
            "type": "inference.cancel", "request_id": request_id, "reply_channel": self.channel_name,
        })

    async def inference_queued(self, message: dict[str, Any]) -> None:
        """A worker took the request; a cancel asked for meanwhile goes to it now."""
        request_id = message["request_id"]
        if request_id not in self.requests:
            return
        self.requests[request_id] = message["worker_channel"]
        if request_id in self.cancel_asked:
            self.cancel_asked.discard(request_id)
            await self._cancel(request_id)

    async def inference_event(self, message: dict[str, Any]) -> None:
        """Passes a worker's event on to the client as it is; a request's last event frees its id."""
        event = message["event"]
        if event["type"] in protocol.FINAL_EVENTS:
            self.requests.pop(message["request_id"], None)
            self.cancel_asked.discard(message["request_id"])
        await self._send(event)

    async def inference_finished(self, message: dict[str, Any]) -> None:
        """The worker is done with the request (even one whose last event was lost): its id is free."""
        self.requests.pop(message["request_id"], None)
        self.cancel_asked.discard(message["request_id"])

    async def _send(self, event: dict[str, Any]) -> None:
        metrics.event_sent(self.channel_name, event)
        await self.send(text_data=json.dumps(event, ensure_ascii=False, allow_nan=False))
