"""A websocket client of ``/ws/generate/`` inside the test process (Channels' communicator), as
every consumer-level test connects: a page of the site's own origin, unless ``headers`` say otherwise."""

from __future__ import annotations

from collections.abc import Sequence

from channels.testing import WebsocketCommunicator

from playground.asgi import application

ORIGIN = (b"origin", b"http://localhost")
HOST = (b"host", b"localhost")
TIMEOUT = 60  # seconds to connect, and for each event a test awaits


def unconnected(headers: Sequence[tuple[bytes, bytes]] = (ORIGIN, HOST)) -> WebsocketCommunicator:
    """A client not yet connected (a test of a refused connection connects it itself)."""
    return WebsocketCommunicator(application, "/ws/generate/", headers=list(headers))


async def connect(headers: Sequence[tuple[bytes, bytes]] = (ORIGIN, HOST)) -> WebsocketCommunicator:
    client = unconnected(headers)
    connected, _ = await client.connect(timeout=TIMEOUT)
    assert connected
    return client
