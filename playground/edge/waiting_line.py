"""The line of generations waiting for a worker's room, as each waiting connection sees it.

Generations wait in the shared ``inference`` channel, which the layer serves first in, first out,
until a worker with room reads one (``playground.worker.IntakeWorker``). Every request carries a
``ticket`` (its submit time). When a worker takes a request off the channel it tells the
``inference-line`` group (``inference.taken``: the taken request's ticket and the worker's recent
rate of freed rows), which every connection with a waiting request joins. So a connection knows
its request's place exactly: the requests in the channel when it sent its own were all ahead of
it (requests, and the pings and cancels that also sit there), and each message taken since with an
earlier ticket or none (a ping, a cancel) moves it one place up. Its ``queued`` events carry
``position`` (1 = next) and ``estimated_wait_s`` (position over the workers' freeing rate; null
until a worker has reported one).

The line is bounded: a generation that finds ``MAX_WAITING`` requests already in the channel is
refused at once with ``busy`` and a retry hint, and none waits longer than ``MAX_WAIT_SECONDS``
(the channel layer keeps messages a margin longer: ``playground.wire.channel_layer``). Both live in
``settings.WAITING_LINE``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from channels.layers import InMemoryChannelLayer
from django.conf import settings

from playground.wire.channel_messages import INFERENCE_CHANNEL


def max_waiting() -> int:
    return int(settings.WAITING_LINE["MAX_WAITING"])


def is_full(ahead: int | None) -> bool:
    """Whether a generation that finds ``ahead`` requests in line (None: the layer cannot tell) is
    refused with ``busy``."""
    return ahead is not None and ahead >= max_waiting()


def max_wait_seconds() -> float:
    return float(settings.WAITING_LINE["MAX_WAIT_SECONDS"])


async def requests_in_line(layer: Any, channel: str = INFERENCE_CHANNEL) -> int | None:
    """Messages on one model's shared generation ``channel`` that no worker has taken yet (None:
    the layer cannot tell). Each model has its own line."""
    if isinstance(layer, InMemoryChannelLayer):
        queue = layer.channels.get(channel)
        return 0 if queue is None else queue.qsize()
    if hasattr(layer, "ring_size") and hasattr(layer, "connection"):  # channels_redis: a sorted set per channel
        total = 0
        for index in range(layer.ring_size):
            total += int(await layer.connection(index).zcard(layer.prefix + channel))
        return total
    return None


@dataclass
class Place:
    """One waiting request of this connection."""

    ticket: float
    ahead: int  # requests in the channel before it that no worker has taken yet
    channel: str = INFERENCE_CHANNEL  # its model's line

    @property
    def position(self) -> int:
        return self.ahead + 1


class Line:
    """A connection's waiting requests and what the workers said about the line's pace."""

    def __init__(self) -> None:
        self.places: dict[str, Place] = {}
        self.rates: dict[str, float] = {}  # worker → rows it frees per second

    def join(self, request_id: str, ticket: float, ahead: int, channel: str = INFERENCE_CHANNEL) -> None:
        self.places[request_id] = Place(ticket, ahead, channel)

    def leave(self, request_id: str) -> None:
        self.places.pop(request_id, None)

    def taken(self, message: dict[str, Any]) -> list[str]:
        """A worker took a request: the ids of this connection's requests that moved up."""
        self.rates[str(message.get("worker"))] = float(message.get("freed_per_s") or 0.0)
        ticket = message.get("ticket")  # None: a ping or a cancel, which also held a place
        channel = message.get("channel", INFERENCE_CHANNEL)  # the model's line it left
        moved = []
        for request_id, place in self.places.items():
            if place.channel != channel:
                continue
            # first in, first out: what is taken while this one waits was ahead of it (but itself)
            if (ticket is None or ticket < place.ticket) and place.ahead > 0:
                place.ahead -= 1
                moved.append(request_id)
        return moved

    def estimated_wait_s(self, place: Place) -> float | None:
        rate = sum(self.rates.values())
        return None if rate <= 0 else round(place.position / rate, 1)

    def event(self, request_id: str) -> dict[str, Any]:
        """The ``queued`` websocket event for a waiting request."""
        place = self.places[request_id]
        return {
            "type": "queued",
            "request_id": request_id,
            "position": place.position,
            "estimated_wait_s": self.estimated_wait_s(place),
        }
