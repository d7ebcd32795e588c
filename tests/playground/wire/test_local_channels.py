"""A process's local channels (each websocket consumer's reply channel) through a real Redis while
other receives of the same process are cancelled all the time, as consumers close and timed waits
for a pong run out: every message still reaches its channel, once and in order, and every
cancelled receive ends."""

from __future__ import annotations

import asyncio
import random

from channels_redis.core import RedisChannelLayer

from playground.wire.channel_layer import SingleTakeRedisChannelLayer

STEADY = 12  # channels read all the time
IMPATIENT = 4  # tasks that receive on a fresh channel and give up within milliseconds, over and over
MESSAGES = 1200


async def traffic(url: str, seed: int) -> tuple[dict[str, list[int]], int]:
    """What each steady channel received, and how many receives were cancelled meanwhile."""
    layer = SingleTakeRedisChannelLayer(hosts=[url], capacity=10 * MESSAGES)
    sender = RedisChannelLayer(hosts=[url], capacity=10 * MESSAGES)  # another process's layer
    steady = [await layer.new_channel() for _ in range(STEADY)]
    received: dict[str, list[int]] = {channel: [] for channel in steady}
    stop = asyncio.Event()
    cancelled = 0

    async def read(channel: str) -> None:
        while (message := await layer.receive(channel))["n"] >= 0:
            received[channel].append(message["n"])

    async def give_up_again_and_again(rng: random.Random) -> None:
        nonlocal cancelled
        while not stop.is_set():
            try:
                await asyncio.wait_for(layer.receive(await layer.new_channel()), rng.uniform(0.0005, 0.01))
            except TimeoutError:
                cancelled += 1

    readers = [asyncio.create_task(read(channel)) for channel in steady]
    rng = random.Random(seed)
    impatient = [asyncio.create_task(give_up_again_and_again(random.Random(seed + i))) for i in range(IMPATIENT)]
    for n in range(MESSAGES):
        await sender.send(steady[n % STEADY], {"type": "test.event", "n": n})
        if rng.random() < 0.2:
            await asyncio.sleep(rng.uniform(0, 0.003))
    stop.set()
    await asyncio.wait_for(asyncio.gather(*impatient), 60)  # every cancelled receive ended
    for channel in steady:
        await sender.send(channel, {"type": "test.event", "n": -1})
    await asyncio.wait_for(asyncio.gather(*readers), 60)
    await layer.flush()
    return received, cancelled


def test_every_message_reaches_its_channel_while_other_receives_are_cancelled(redis_url):
    received, cancelled = asyncio.run(traffic(redis_url, seed=3))
    assert cancelled > 50  # the impatient receives really were cut short, many times
    for index, channel in enumerate(received):
        assert received[channel] == list(range(index, MESSAGES, STEADY)), channel
