"""The Redis channel layer entry: its read timeout must outlast the layer's blocking read."""

from __future__ import annotations

import pytest
from channels_redis.core import RedisChannelLayer
from channels_redis.utils import create_pool

from playground.wire.channel_layer import BLOCKING_READ_SECONDS, RedisLayerError, redis_channel_layer


def test_the_read_timeout_outlasts_the_layers_blocking_read():
    (host,) = redis_channel_layer("redis://redis:6379/0", 300)["CONFIG"]["hosts"]
    assert RedisChannelLayer.brpop_timeout == BLOCKING_READ_SECONDS
    assert host["socket_timeout"] > RedisChannelLayer.brpop_timeout
    assert host["socket_keepalive"] is True and host["health_check_interval"] > 0


def test_the_connections_redis_makes_carry_the_settings():
    """What the layer actually hands redis-py, not just what the dict says."""
    (host,) = redis_channel_layer("redis://redis:6379/0", 300)["CONFIG"]["hosts"]
    kwargs = create_pool(host).connection_kwargs
    assert kwargs["socket_timeout"] == host["socket_timeout"] > BLOCKING_READ_SECONDS
    assert kwargs["host"] == "redis" and kwargs["port"] == 6379 and kwargs["db"] == 0


def test_a_longer_read_timeout_in_the_url_wins():
    (host,) = redis_channel_layer("redis://redis:6379/0?socket_timeout=30", 300)["CONFIG"]["hosts"]
    assert create_pool(host).connection_kwargs["socket_timeout"] == 30


@pytest.mark.parametrize(
    "url, message",
    [
        ("redis://redis:6379/0?socket_timeout=5", "must exceed the channel layer's blocking read"),
        ("redis://redis:6379/0?socket_timeout=soon", "must be a number of seconds"),
        ("http://redis:6379/0", "must start with redis://"),
    ],
)
def test_urls_that_would_break_the_layer_are_refused(url, message):
    with pytest.raises(RedisLayerError, match=message):
        redis_channel_layer(url, 300)


def test_the_layers_keep_messages_longer_than_the_longest_wait_in_line():
    from playground.wire.channel_layer import in_memory_channel_layer, message_expiry

    assert redis_channel_layer("redis://redis:6379/0", 300)["CONFIG"]["expiry"] == message_expiry(300) > 300
    assert in_memory_channel_layer(900)["CONFIG"]["expiry"] > 900
