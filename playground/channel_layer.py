"""``PLAYGROUND_REDIS_URL`` → the Redis channel layer's ``CHANNEL_LAYERS`` entry, with connection
settings that suit the layer's blocking reads. Imported by the settings.

channels_redis waits for messages with a blocking ``BZPOPMIN`` that Redis answers after at most
``RedisChannelLayer.brpop_timeout`` seconds (5), empty when nothing came. The Redis client gives up
on any read after its ``socket_timeout``, which redis-py 8 sets to 5 s by default: the same length,
so every receive that found nothing for 5 s failed with ``TimeoutError`` instead. An idle
``runworker`` exited and daphne closed every websocket quiet for 5 s with 1011. Here the read
timeout outlasts the blocking wait by a margin, so it only fires when Redis or the link is really
gone, and the connections are checked the other ways a long-lived client needs.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

from channels_redis.core import RedisChannelLayer

# How long Redis may hold the layer's blocking read before answering (seconds).
BLOCKING_READ_SECONDS: float = RedisChannelLayer.brpop_timeout
# A read that outlasts the blocking wait by this much means Redis or the network is gone.
READ_MARGIN_SECONDS = 5.0
CONNECT_TIMEOUT_SECONDS = 5.0
# A pooled connection unused for this long is PINGed before its next command (a proxy or
# Redis' own `timeout` may have closed it meanwhile).
HEALTH_CHECK_SECONDS = 30
# Messages (requests, events) not received within this many seconds are dropped by the layer.
MESSAGE_EXPIRY_SECONDS = 60
CHANNEL_CAPACITY = 1000


class RedisLayerError(ValueError):
    """A PLAYGROUND_REDIS_URL whose options would break the layer's blocking reads."""


def redis_channel_layer(url: str) -> dict[str, Any]:
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
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [host], "capacity": CHANNEL_CAPACITY, "expiry": MESSAGE_EXPIRY_SECONDS},
    }
