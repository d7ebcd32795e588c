"""The process-local channels of the Redis layer (a websocket consumer's reply channel, a ping's
answer channel): one task reads them from Redis and files each message under its channel; a
``receive`` waits on its own channel's queue only.

channels_redis lets whichever ``receive`` comes first do the Redis read for every local channel of
the process, inside that caller's task. Cancelling that caller (a consumer closing its socket, a
timed wait for a pong running out) then cut a blocking ``BZPOPMIN`` short: Redis had already taken
the message, the client dropped the connection before reading it, and another consumer's token
event was gone (the compose soak lost one in 10,723 requests). Its queues were also never dropped:
every pong that came after its waiter had stopped listening, and every event sent to a closed
socket's channel, stayed in the web process for good.

Here the read belongs to the mailbox's own task (``pump``), which nothing cancels but the end of
its event loop, so a cancelled ``receive`` leaves only its own queue's wait and returns at once. A
queue nobody has asked for within the layer's message expiry is dropped with what it holds, as
Redis drops a message nobody received in that time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

# What the pump does with one read: (the channel or channels it was sent to, the message).
Read = Callable[[], Awaitable[tuple[str | list[str], dict[str, Any]]]]
SWEEP_INTERVAL_SECONDS = 5.0  # how often queues nobody asked for are looked for


@dataclass
class _Queue:
    """One local channel's messages, oldest first, and who waits for them."""

    wanted_at: float  # the last time a receive asked for it (or its first message came)
    messages: deque[dict[str, Any]] = field(default_factory=deque)
    waiters: deque[asyncio.Future[None]] = field(default_factory=deque)
    overflowed: bool = False  # whether dropping its oldest message has been logged


class LocalMailbox:
    """The messages of one process's local channels, filed by channel, for one event loop.

    ``read`` takes the next message sent to any of them off Redis (waiting for one); ``capacity`` is
    the most a queue holds (the oldest goes first beyond it, logged once a queue), ``expiry_seconds``
    how long a queue nobody asks for is kept (by ``clock``, in seconds).
    """

    def __init__(self, read: Read, capacity: int, expiry_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        if expiry_seconds <= 0:
            raise ValueError(f"expiry_seconds must be positive, got {expiry_seconds}")
        self._read = read
        self._capacity = capacity
        self._expiry_seconds = expiry_seconds
        self._clock = clock
        self._queues: dict[str, _Queue] = {}
        self._loop = asyncio.get_running_loop()
        self._pump: asyncio.Task[None] | None = None
        self._waiting = 0  # receives waiting and not yet woken, every queue together
        self._swept_at = clock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def queued(self) -> int:
        """How many messages wait in every queue."""
        return sum(len(queue.messages) for queue in self._queues.values())

    def channels(self) -> int:
        """How many channels have a queue."""
        return len(self._queues)

    async def receive(self, channel: str) -> dict[str, Any]:
        """The oldest message for ``channel``, waiting for one. Cancelling it loses nothing."""
        queue = self._queue(channel)
        while not queue.messages:
            self._ensure_pump()
            waiter: asyncio.Future[None] = self._loop.create_future()
            queue.waiters.append(waiter)
            queue.wanted_at = self._clock()
            self._waiting += 1
            try:
                await waiter
            finally:
                if waiter.cancelled():  # (one that was woken was counted out then)
                    self._waiting -= 1
                queue.waiters.remove(waiter)
                queue.wanted_at = self._clock()
                if queue.messages and queue.waiters:  # woken, then cancelled: the next one's turn
                    self._wake(queue)
        message = queue.messages.popleft()
        if queue.messages and queue.waiters:  # another receive of the same channel: its turn
            self._wake(queue)
        return message

    def _queue(self, channel: str) -> _Queue:
        queue = self._queues.get(channel)
        if queue is None:
            queue = self._queues[channel] = _Queue(wanted_at=self._clock())
        return queue

    def _ensure_pump(self) -> None:
        if self._pump is None or self._pump.done():
            self._pump = self._loop.create_task(self._run_pump(), name="local channels' pump")

    async def _run_pump(self) -> None:
        """Reads while anybody waits; a read in progress is always finished and its message filed."""
        while self._waiting:
            try:
                channels, message = await self._read()
            except Exception:  # noqa: BLE001 — the read's own retries ran out: the layer logged why
                log.exception("reading the process's local channels failed; trying again")
                await asyncio.sleep(0.5)
                continue
            for channel in channels if isinstance(channels, list) else [channels]:
                self._file(channel, message)
            self._sweep()

    def _file(self, channel: str, message: dict[str, Any]) -> None:
        queue = self._queue(channel)
        if len(queue.messages) >= self._capacity:
            queue.messages.popleft()
            if not queue.overflowed:
                queue.overflowed = True
                log.warning("channel %s holds %d unread messages; dropping its oldest", channel, self._capacity)
        queue.messages.append(message)
        self._wake(queue)

    def _sweep(self) -> None:
        """Drops the queues nobody waits on and nobody asked for within the expiry."""
        now = self._clock()
        if now - self._swept_at < SWEEP_INTERVAL_SECONDS:
            return
        self._swept_at = now
        stale = [
            name for name, queue in self._queues.items() if not queue.waiters and now - queue.wanted_at > self._expiry_seconds
        ]
        for name in stale:
            del self._queues[name]

    def _wake(self, queue: _Queue) -> None:
        """Wakes the longest-waiting receive of ``queue`` that is still waiting."""
        for waiter in queue.waiters:
            if not waiter.done():
                waiter.set_result(None)
                self._waiting -= 1
                return

    def close(self) -> None:
        """Stops the pump (its event loop is ending): a read in progress is given up."""
        if self._pump is not None:
            self._pump.cancel()
