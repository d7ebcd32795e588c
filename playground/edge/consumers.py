"""The ``/ws/generate/`` websocket: checks each frame, hands requests to a worker, relays its events.

The consumer never touches the model. It is a front door: it parses frames into typed jobs
(``playground.edge.frames``) and turns them into the connection's ``Submissions``
(``playground.edge.submission``), which speaks to the inference workers through the channel layer, so
workers may live in this process or on other machines. Every frame gets its answer or a structured
``error``; no reply grows past ``events.MAX_REPLY_BYTES``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer

from playground.edge import frames, metrics
from playground.edge.submission import Submissions
from playground.wire import channel_messages, embedded, events

log = logging.getLogger(__name__)


class GenerateConsumer(AsyncWebsocketConsumer):
    gone = False  # the socket closed under a send: nothing more is sent, its requests were cancelled

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """However the connection ends (its ``disconnect``, or the server cancelling a consumer that
        was slow to end), every request it started is cancelled."""
        try:
            await super().__call__(scope, receive, send)
        finally:
            if hasattr(self, "submissions"):
                await asyncio.shield(self.submissions.close())

    async def connect(self) -> None:
        embedded.ensure_worker()
        client = self.scope.get("client")
        address = str(client[0]) if client else "unknown"  # the key of the per-client limits
        self.submissions = Submissions(self.channel_layer, self.channel_name, address, self._send)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        """Closing the socket cancels every request it started (``Submissions.close``)."""
        if hasattr(self, "submissions"):
            await self.submissions.close()

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
            await self.submissions.cancel(command.request_id)
            return
        refusal = await self.submissions.submit(command)
        if refusal is not None:
            await self._send(refusal)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """A worker's message is relayed without the database check channels makes before every
        handler (``aclose_old_connections``: a hop to the sync thread and back, for each of the
        hundreds of token events a second a batch streams); relaying reads no database. Nor does
        the socket's close, which must cancel its requests at once, not after whatever occupies
        that thread. The socket's other messages (connect, frames) keep it."""
        if message["type"] in channel_messages.TO_FRONT_DOOR or message["type"] == "websocket.disconnect":
            handler = getattr(self, get_handler_name(message), None)
            if handler is not None:
                await handler(message)
                return
        await super().dispatch(message)

    # The channel layer's messages for this connection (``playground.wire.channel_messages``), each
    # handled by the connection's submissions.

    async def inference_queued(self, message: dict[str, Any]) -> None:
        await self.submissions.handle(message)

    async def inference_event(self, message: dict[str, Any]) -> None:
        await self.submissions.handle(message)

    async def inference_finished(self, message: dict[str, Any]) -> None:
        await self.submissions.handle(message)

    async def inference_heartbeat(self, message: dict[str, Any]) -> None:
        await self.submissions.handle(message)

    async def inference_taken(self, message: dict[str, Any]) -> None:
        await self.submissions.handle(message)

    async def _send(self, event: dict[str, Any] | events.Frame) -> None:
        """Sends an event; one the worker encoded already (a ``Frame``) goes out as its text. A socket
        that closed before the server's ``disconnect`` reached this consumer refuses the send (the
        server's own error): its requests are cancelled at once and nothing more is sent."""
        if self.gone:
            return
        metrics.event_sent(self.channel_name, event)
        text = event.text if isinstance(event, events.Frame) else events.encode_event(event)
        try:
            await self.send(text_data=text)
        except Exception as error:  # noqa: BLE001 — the server says the socket is gone, in its own words
            self.gone = True
            log.info("the socket closed as an event was sent (%s: %s); its requests are cancelled", type(error).__name__, error)
            await asyncio.shield(self.submissions.close())
