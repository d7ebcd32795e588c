"""``PLAYGROUND_REDIS_URL`` → the Redis channel layer's ``CHANNEL_LAYERS`` entry, with connection
settings that suit the layer's blocking reads. Imported by the settings.

channels_redis waits for messages with a blocking ``BZPOPMIN`` that Redis answers after at most
``RedisChannelLayer.brpop_timeout`` seconds (5), empty when nothing came. The Redis client gives up
on any read after its ``socket_timeout``, which redis-py 8 sets to 5 s by default: the same length,
so every receive that found nothing for 5 s failed with ``TimeoutError`` instead. An idle
``runworker`` exited and daphne closed every websocket quiet for 5 s with 1011. Here the read
timeout outlasts the blocking wait by a margin, so it only fires when Redis or the link is really
gone, and the connections are checked the other ways a long-lived client needs.

``SingleTakeRedisChannelLayer`` is channels_redis' layer with one change: each layer instance (one
per process) keeps its own in-flight backup of the messages it has just taken. The stock layer keeps
one backup per channel, shared by every reader, and each receive first puts everything in that backup
back into the channel (meant for messages a crashed reader never finished), so a request another
worker had taken a moment before went back into the line and was served twice (about 1 in 8 with
three readers taking a burst; ``tests/playground/wire/test_single_take.py``). With a backup of its own, a
reader only puts back what it took itself and was interrupted in. It can also put a message back
into a shared channel at the place it first had (``send_in_place``). And its process-local channels
are read by a task of their own (``playground.wire.local_mailbox``), so cancelling a ``receive`` (a
consumer closing, a timed wait for a pong) never cuts a Redis read short and loses another
channel's message, and a channel nobody reads any more does not keep its messages for good.

It also outlives a Redis restart (docs/deploy.md, "Redis restarts"): a ``receive`` that loses Redis
waits and tries again until Redis answers (one warning per outage, one line when it is back), so
workers and web processes reconnect by themselves; a ``send`` tries again for up to
``RECONNECT_SECONDS`` before it fails; and ``epoch()`` names the Redis server's run (its
``run_id``), which changes when Redis restarts: every message Redis held is gone then, and a
connection's watchdog resubmits or ends the requests it was watching (``playground.edge.watchdog``).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

import redis.exceptions
from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer
from channels_redis.core import RedisChannelLayer

from playground.wire.local_mailbox import LocalMailbox

# How long Redis may hold the layer's blocking read before answering (seconds).
BLOCKING_READ_SECONDS: float = RedisChannelLayer.brpop_timeout
# A read that outlasts the blocking wait by this much means Redis or the network is gone.
READ_MARGIN_SECONDS = 5.0
CONNECT_TIMEOUT_SECONDS = 5.0
# A pooled connection unused for this long is PINGed before its next command (a proxy or
# Redis' own `timeout` may have closed it meanwhile).
HEALTH_CHECK_SECONDS = 30
# The layer drops messages (requests, events) not received within the longest wait in line
# (settings.WAITING_LINE's MAX_WAIT_SECONDS) plus this margin: the connection refuses a request
# with `busy` when its wait runs out, before the layer could drop it silently.
EXPIRY_MARGIN_SECONDS = 60.0
CHANNEL_CAPACITY = 1000
# While Redis cannot be reached: a receive waits this long between tries (forever), a send tries
# again for this long in all before it fails (shorter than a worker's lease: playground.wire.liveness).
RECONNECT_INTERVAL_SECONDS = 0.5
RECONNECT_SECONDS = 10.0
EPOCH_CACHE_SECONDS = 1.0  # how long the Redis server's run id is trusted before it is asked again
# What a lost Redis raises (a refused or dropped connection, a read that timed out, one still loading its data)
LOST_REDIS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, ConnectionError, TimeoutError, OSError)

log = logging.getLogger(__name__)
T = TypeVar("T")


def message_expiry(max_wait_seconds: float) -> int:
    """The layer's message expiry (seconds) for a waiting line of at most ``max_wait_seconds``."""
    return int(max_wait_seconds + EXPIRY_MARGIN_SECONDS)


def in_memory_channel_layer(max_wait_seconds: float) -> dict[str, Any]:
    """The ``CHANNEL_LAYERS["default"]`` entry for one process (the embedded worker)."""
    return {
        "BACKEND": "channels.layers.InMemoryChannelLayer",
        "CONFIG": {"capacity": CHANNEL_CAPACITY, "expiry": message_expiry(max_wait_seconds)},
    }


class SingleTakeRedisChannelLayer(RedisChannelLayer):
    """The Redis layer with an in-flight backup per layer instance, so no message is taken twice."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reader_id = uuid.uuid4().hex  # this instance's backups: "<channel>$inflight$<id>"
        self._lost_since: float | None = None  # when Redis stopped answering (None: it answers)
        self._epoch: tuple[float, str | None] = (-EPOCH_CACHE_SECONDS, None)  # (asked at, run id)
        self._mailboxes: dict[str, LocalMailbox] = {}  # Redis key (a local channel's prefix) → its mailbox

    async def receive(self, channel: str) -> dict[str, Any]:
        """The next message of ``channel``: a process-local one through this process's mailbox, a
        shared one straight from Redis; either tried again until Redis answers when it is lost."""
        assert self.require_valid_channel_name(channel)
        if "!" in channel:
            return await self._local_mailbox(self.non_local_name(channel)).receive(channel)
        _, message = await self._read(channel)
        return message

    async def _read(self, channel: str) -> tuple[str | list[str], dict[str, Any]]:
        """channels_redis' read of one message (and the channel it names), tried again until Redis
        answers when it is lost."""
        return await self._retrying(lambda: self.receive_single(channel), give_up_after=None)

    def _local_mailbox(self, key: str) -> LocalMailbox:
        """The mailbox of the local channels sent through Redis key ``key`` (one per prefix given to
        ``new_channel``: ``specific.<process>!``) for the running event loop; a new one when the
        loop of the old one is closed."""
        if not key.endswith(self.client_prefix + "!"):
            raise ValueError(f"{key!r} is not a local channel of this process")
        mailbox = self._mailboxes.get(key)
        if mailbox is None or mailbox.loop.is_closed():
            mailbox = self._mailboxes[key] = LocalMailbox(lambda: self._read(key), self.capacity, self.expiry)
        elif mailbox.loop is not asyncio.get_running_loop():
            raise RuntimeError("two event loops are receiving on one channel layer's local channels at once")
        return mailbox

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        """channels_redis' send, tried again for up to ``RECONNECT_SECONDS`` when Redis is lost."""
        await self._retrying(lambda: super(SingleTakeRedisChannelLayer, self).send(channel, message))

    async def epoch(self) -> str | None:
        """The Redis server's run id (changes when Redis restarts, and every message is lost with
        it); None when Redis cannot be reached. Asked at most every ``EPOCH_CACHE_SECONDS``."""
        asked, run_id = self._epoch
        if time.monotonic() - asked < EPOCH_CACHE_SECONDS:
            return run_id
        try:
            info = await self.connection(0).info("server")
            run_id = str(info.get("run_id")) if info.get("run_id") else None
        except LOST_REDIS:
            run_id = None
        self._epoch = (time.monotonic(), run_id)
        return run_id

    async def _retrying(self, attempt: Callable[[], Awaitable[T]], give_up_after: float | None = RECONNECT_SECONDS) -> T:
        """``attempt`` until Redis answers it, every ``RECONNECT_INTERVAL_SECONDS``; the last
        error again after ``give_up_after`` seconds (None: never)."""
        deadline = None if give_up_after is None else time.monotonic() + give_up_after
        while True:
            try:
                result = await attempt()
            except LOST_REDIS as error:
                self._lost(error)
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(RECONNECT_INTERVAL_SECONDS)
                continue
            self._found()
            return result

    def _lost(self, error: BaseException) -> None:
        if self._lost_since is None:
            self._lost_since = time.monotonic()
            log.warning("the channel layer lost Redis (%s: %s); trying again", type(error).__name__, error)

    def _found(self) -> None:
        if self._lost_since is not None:
            log.warning("the channel layer reached Redis again after %.1f s", time.monotonic() - self._lost_since)
            self._lost_since = None

    def _backup_channel_name(self, channel: str) -> str:
        return f"{channel}$inflight${self._reader_id}"

    async def _clean_receive_backup(self, index: int, channel: str) -> None:
        """Drops the message just taken from this reader's backup, tried again when Redis is lost: a
        backup left behind (a pooled connection that died with a restarted Redis) is put back into
        the channel by the next receive, and the message would be taken twice."""
        await self._retrying(lambda: super(SingleTakeRedisChannelLayer, self)._clean_receive_backup(index, channel))

    async def send_in_place(self, channel: str, message: dict[str, Any], ticket: float) -> None:
        """``send`` for a message going back into a line it had already waited in (a request whose
        worker died before starting it): the layer orders a channel by each message's score, the
        time it was sent, so scoring it by its first ``ticket`` (a ``time.time()``) puts it back
        ahead of every request sent after it, instead of at the back. A shared channel only."""
        if "!" in channel:
            raise ValueError(f"send_in_place is for shared channels, not process-local {channel!r}")
        key = self.prefix + channel
        connection = self.connection(next(self._send_index_generator))
        await connection.zremrangebyscore(key, min=0, max=int(time.time()) - int(self.expiry))  # as send: drop expired
        if await connection.zcount(key, "-inf", "+inf") >= self.get_capacity(channel):
            raise ChannelFull()
        await connection.zadd(key, {self.serialize(message): ticket})
        await connection.expire(key, int(self.expiry))


async def layer_epoch(layer: Any) -> str | None:
    """The layer's epoch (``SingleTakeRedisChannelLayer.epoch``); None for a layer that keeps its
    messages as long as its process lives (the in-memory one) or that cannot tell."""
    epoch = getattr(layer, "epoch", None)
    return None if epoch is None else await epoch()


async def oldest_unread_age(layer: Any, channel: str) -> float | None:
    """How long (seconds) the oldest message sent to ``channel`` has waited for its reader: 0 when
    none waits, None when the layer cannot tell. A connection's watchdog asks it of its own
    channel: a worker's heartbeats waiting there while the connection does not read (it is busy, or
    closing) mean the silence is the connection's, not the worker's (``playground.wire.liveness``).
    A reader that keeps up leaves nothing older than a moment, however busy its channel."""
    if isinstance(layer, InMemoryChannelLayer):
        queue = layer.channels.get(channel)
        if queue is None or queue.empty():
            return 0.0
        expires_at = queue._queue[0][0]  # (the layer keeps (expiry time, message) pairs, oldest first)
        return max(0.0, time.time() - (expires_at - layer.expiry))
    if isinstance(layer, RedisChannelLayer) and "!" in channel:  # a process-local channel: its process's queue
        key = layer.prefix + layer.non_local_name(channel)
        oldest = await layer.connection(layer.consistent_hash(channel)).zrange(key, 0, 0, withscores=True)
        return max(0.0, time.time() - float(oldest[0][1])) if oldest else 0.0  # (scored by send time)
    return None


class RedisLayerError(ValueError):
    """A PLAYGROUND_REDIS_URL whose options would break the layer's blocking reads."""


def redis_channel_layer(url: str, max_wait_seconds: float) -> dict[str, Any]:
    """The ``CHANNEL_LAYERS["default"]`` entry for a ``redis://`` or ``rediss://`` URL.

    Options given in the URL's query (``?socket_timeout=30``) win over these defaults, as
    redis-py reads them; a read timeout that would not outlast the blocking wait is refused.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise RedisLayerError(f"PLAYGROUND_REDIS_URL must start with redis://, rediss:// or unix://, got {parts.scheme!r}")
    query = dict(parse_qsl(parts.query))
    if "socket_timeout" in query:
        try:
            read_timeout = float(query["socket_timeout"])
        except ValueError:
            raise RedisLayerError(
                f"PLAYGROUND_REDIS_URL's socket_timeout must be a number of seconds, got {query['socket_timeout']!r}"
            ) from None
        if read_timeout <= BLOCKING_READ_SECONDS:
            raise RedisLayerError(
                f"PLAYGROUND_REDIS_URL's socket_timeout ({read_timeout:g} s) must exceed the channel layer's "
                f"blocking read ({BLOCKING_READ_SECONDS:g} s), or every idle receive fails"
            )
    host = {
        "address": url,
        "socket_timeout": BLOCKING_READ_SECONDS + READ_MARGIN_SECONDS,
        "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "socket_keepalive": True,  # the kernel notices a peer that vanished without closing
        "health_check_interval": HEALTH_CHECK_SECONDS,
    }
    return {
        "BACKEND": "playground.wire.channel_layer.SingleTakeRedisChannelLayer",
        "CONFIG": {"hosts": [host], "capacity": CHANNEL_CAPACITY, "expiry": message_expiry(max_wait_seconds)},
    }
