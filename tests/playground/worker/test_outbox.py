"""The decode thread's events reach the worker's event loop through its ``Outbox``: each in its own
job's queue, in the order put, from any thread; a burst put before the loop drains is one drain."""

from __future__ import annotations

import asyncio
import threading

import pytest

from playground.worker.outbox import Outbox, flush_outboxes, outbox


def test_events_from_another_thread_reach_their_queues_in_order():
    async def scenario() -> tuple[list[int], list[int]]:
        box = outbox()
        first: asyncio.Queue[int] = asyncio.Queue()
        second: asyncio.Queue[int] = asyncio.Queue()

        def decode_thread() -> None:
            for i in range(50):
                box.put(first if i % 2 == 0 else second, i)

        thread = threading.Thread(target=decode_thread)
        thread.start()
        got_first = [await first.get() for _ in range(25)]
        got_second = [await second.get() for _ in range(25)]
        thread.join()
        return got_first, got_second

    got_first, got_second = asyncio.run(scenario())
    assert got_first == list(range(0, 50, 2)) and got_second == list(range(1, 50, 2))


def test_a_burst_put_before_the_loop_runs_is_one_drain():
    async def scenario() -> tuple[int, list[str]]:
        loop = asyncio.get_running_loop()
        drains = 0
        box = Outbox(loop)
        real_drain = box._drain

        def counted_drain() -> None:
            nonlocal drains
            drains += 1
            real_drain()

        box._drain = counted_drain  # type: ignore[method-assign]
        queue: asyncio.Queue[str] = asyncio.Queue()
        for item in ("a", "b", "c"):  # the loop does not run between these puts
            box.put(queue, item)
        got = [await queue.get() for _ in range(3)]
        box.put(queue, "d")  # after the drain: a new one
        got.append(await queue.get())
        return drains, got

    drains, got = asyncio.run(scenario())
    assert got == ["a", "b", "c", "d"] and drains == 2


def test_a_closed_loop_refuses_events():
    loop = asyncio.new_event_loop()
    box = Outbox(loop)
    loop.close()
    with pytest.raises(RuntimeError):
        box.put(asyncio.Queue(), "late")
    with pytest.raises(RuntimeError):  # still refused, and not stuck waiting for a drain that never comes
        box.put(asyncio.Queue(), "later")


def test_items_put_without_waking_wait_for_the_flush():
    async def scenario() -> tuple[int, list[str]]:
        # A box of its own, outside the registry: a decode loop left running by another test calls
        # flush_outboxes after each of its steps, which would drain a registered box early.
        box = Outbox(asyncio.get_running_loop())
        queue: asyncio.Queue[str] = asyncio.Queue()
        box.put(queue, "a", wake=False)  # as the decode loop puts its step's events
        box.put(queue, "b", wake=False)
        await asyncio.sleep(0.05)  # the loop runs, but nothing asked it to drain
        waiting = queue.qsize()
        box.flush()  # the step has ended
        got = [await asyncio.wait_for(queue.get(), 5) for _ in range(2)]
        return waiting, got

    assert asyncio.run(scenario()) == (0, ["a", "b"])


def test_flush_outboxes_reaches_the_running_loops_box():
    async def scenario() -> list[str]:
        box = outbox()
        queue: asyncio.Queue[str] = asyncio.Queue()
        box.put(queue, "a", wake=False)
        box.put(queue, "b", wake=False)
        threading.Thread(target=flush_outboxes).start()  # the decode loop's thread, after its step
        return [await asyncio.wait_for(queue.get(), 5) for _ in range(2)]

    assert asyncio.run(scenario()) == ["a", "b"]
