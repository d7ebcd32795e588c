"""Several worker processes reading the shared ``inference`` channel through a real Redis: every
request is taken by exactly one of them with our layer, where channels_redis' own layer hands some
requests to two (its in-flight backup is shared by every reader; see playground/wire/channel_layer.py)."""

from __future__ import annotations

import asyncio
import collections
import subprocess
import sys
import time
from pathlib import Path

import pytest
from channels_redis.core import RedisChannelLayer

READERS = 3
MESSAGES = 900

# One worker process: takes messages off `inference`, writes each one's number, works a moment.
READER = """
import asyncio, importlib, sys
module, name = sys.argv[3].rsplit(".", 1)
layer = getattr(importlib.import_module(module), name)(hosts=[sys.argv[1]])
async def main():
    with open(sys.argv[2], "w") as out:
        while (message := await layer.receive("inference"))["n"] >= 0:
            out.write(f"{message['n']}\\n")
            out.flush()
            await asyncio.sleep(0.002)
asyncio.run(main())
"""


def takes(layer_class: str, url: str, folder: Path) -> collections.Counter[int]:
    """How many times each of MESSAGES requests, sent in bursts, was taken by READERS processes."""
    outputs = [folder / f"{layer_class.rsplit('.', 1)[1]}-{i}.txt" for i in range(READERS)]
    readers = [subprocess.Popen([sys.executable, "-c", READER, url, str(out), layer_class]) for out in outputs]
    try:
        deadline = time.monotonic() + 60  # every reader started (it opens its output before it reads)
        while not all(out.exists() for out in outputs) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # and waiting on the channel

        async def send() -> None:
            sender = RedisChannelLayer(hosts=[url], capacity=10 * MESSAGES)
            for n in range(MESSAGES):
                await sender.send("inference", {"type": "inference.request", "n": n})
                if n % 5 == 0:
                    await asyncio.sleep(0.003)
            await asyncio.sleep(2)
            for _ in readers:
                await sender.send("inference", {"type": "inference.request", "n": -1})  # stop

        asyncio.run(send())
        for reader in readers:
            assert reader.wait(timeout=60) == 0
    finally:
        for reader in readers:
            reader.kill()
    return collections.Counter(int(line) for out in outputs for line in out.read_text().split())


def test_each_request_is_taken_once_by_one_of_several_workers(redis_url, tmp_path):
    taken = takes("playground.wire.channel_layer.SingleTakeRedisChannelLayer", redis_url, tmp_path)
    assert sorted(taken) == list(range(MESSAGES))  # none lost
    assert [n for n, times in taken.items() if times > 1] == []


def test_the_stock_layer_hands_some_requests_to_two_workers(redis_url, tmp_path):
    """The race this layer removes is really provoked by the test above's setup (a race: a burst that
    happens not to provoke it is sent again, three bursts at most)."""
    for attempt in range(3):
        folder = tmp_path / f"burst-{attempt}"
        folder.mkdir()
        fresh = redis_url.rsplit("/", 1)[0] + f"/{attempt + 1}"  # a database of its own: nothing left from a burst before
        taken = takes("channels_redis.core.RedisChannelLayer", fresh, folder)
        assert sorted(taken) == list(range(MESSAGES))
        if sum(1 for times in taken.values() if times > 1) > 0:
            return
    raise AssertionError("three bursts and no request taken twice by the stock layer")


def test_a_request_put_back_in_place_is_taken_before_those_sent_after_it(redis_url):
    from playground.wire.channel_layer import SingleTakeRedisChannelLayer

    async def order() -> list[str]:
        layer = SingleTakeRedisChannelLayer(hosts=[redis_url], expiry=360)
        first_sent = time.time()  # the lost request's ticket: sent before the others
        for name in ("b", "c"):
            await layer.send("inference", {"type": "inference.request", "name": name})
        await layer.send_in_place("inference", {"type": "inference.request", "name": "a"}, first_sent)
        await layer.send("inference", {"type": "inference.request", "name": "d"})
        taken = [(await layer.receive("inference"))["name"] for _ in range(4)]
        with pytest.raises(ValueError, match="shared channels"):
            await layer.send_in_place("inference.reply!abc", {"type": "x"}, first_sent)
        await layer.flush()
        return taken

    assert asyncio.run(order()) == ["a", "b", "c", "d"]  # with send, "a" would come third
