"""The local channels' mailbox with a read of our own making (a queue the test fills) and a clock
the test turns: filing, cancelling, waking and forgetting, whatever order things happen in."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from playground.wire import local_mailbox
from playground.wire.local_mailbox import LocalMailbox


class Sent:
    """What the mailbox's read returns: (channel or channels, message) pairs the test puts in."""

    def __init__(self) -> None:
        self.line: asyncio.Queue[tuple[str | list[str], dict[str, Any]]] = asyncio.Queue()
        self.reads_begun = 0

    async def read(self) -> tuple[str | list[str], dict[str, Any]]:
        self.reads_begun += 1
        return await self.line.get()

    def send(self, channel: str | list[str], n: int) -> None:
        self.line.put_nowait((channel, {"n": n}))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def mailboxes() -> Iterator[Callable[..., LocalMailbox]]:
    """Makes mailboxes (``LocalMailbox``'s arguments) and stops their pumps at the end: nothing
    would ever be sent to the reads they are in."""
    made: list[LocalMailbox] = []

    def make(*args: Any, **kwargs: Any) -> LocalMailbox:
        made.append(LocalMailbox(*args, **kwargs))
        return made[-1]

    yield make
    for mailbox in made:
        mailbox.close()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_each_channel_gets_its_own_messages_in_order(mailboxes) -> None:
    sent = Sent()
    mailbox = mailboxes(sent.read, capacity=100, expiry_seconds=60)
    for n in range(6):
        sent.send("a!1" if n % 2 else "a!2", n)
    sent.send(["a!1", "a!2"], 6)  # a group message to both
    one = [(await mailbox.receive("a!1"))["n"] for _ in range(4)]
    two = [(await mailbox.receive("a!2"))["n"] for _ in range(4)]
    assert one == [1, 3, 5, 6]
    assert two == [0, 2, 4, 6]


async def test_a_cancelled_receive_loses_nothing_and_ends_without_waiting_for_the_read(mailboxes) -> None:
    sent = Sent()
    mailbox = mailboxes(sent.read, capacity=100, expiry_seconds=60)
    waiting = asyncio.ensure_future(mailbox.receive("a!1"))
    await settle()
    assert sent.reads_begun == 1  # the pump is in its read, for the waiting receive
    waiting.cancel()
    await settle()
    assert waiting.cancelled()  # ended while the read still waits
    sent.send("a!1", 7)  # the read in progress finishes and files its message anyway
    await settle()
    assert mailbox.queued() == 1
    assert (await mailbox.receive("a!1")) == {"n": 7}


async def test_a_woken_receive_cancelled_before_it_ran_passes_the_message_on(mailboxes) -> None:
    sent = Sent()
    mailbox = mailboxes(sent.read, capacity=100, expiry_seconds=60)
    first = asyncio.ensure_future(mailbox.receive("a!1"))
    second = asyncio.ensure_future(mailbox.receive("a!1"))
    await settle()
    sent.send("a!1", 1)
    await asyncio.sleep(0)  # the pump's read gets the message, files it and wakes the first waiter
    first.cancel()  # which is cancelled before it runs
    assert (await asyncio.wait_for(second, 5)) == {"n": 1}
    assert first.cancelled()
    assert mailbox.queued() == 0


async def test_a_queue_nobody_asks_for_is_dropped_after_the_expiry(mailboxes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_mailbox, "SWEEP_INTERVAL_SECONDS", 0.0)
    sent, clock = Sent(), Clock()
    mailbox = mailboxes(sent.read, capacity=100, expiry_seconds=60, clock=clock)
    for n in range(3):
        sent.send("a!closed", n)  # events for a socket that closed: nobody will read them
    sent.send("a!live", 3)
    assert (await mailbox.receive("a!live")) == {"n": 3}
    assert mailbox.channels() == 2

    listening = asyncio.ensure_future(mailbox.receive("a!live"))
    clock.now = 59.0
    sent.send("a!pong", 4)  # an answer that came after its waiter stopped listening
    await settle()
    assert mailbox.channels() == 3  # nothing is older than the expiry yet

    clock.now = 61.0
    sent.send("a!live", 5)
    assert (await asyncio.wait_for(listening, 5)) == {"n": 5}
    assert mailbox.channels() == 2  # "a!closed" is gone with its messages; the live and the pong stay
    assert mailbox.queued() == 1

    clock.now = 200.0
    waiting = asyncio.ensure_future(mailbox.receive("a!live"))  # a receive that waits keeps its queue
    sent.send("a!other", 6)
    await settle()
    assert mailbox.channels() == 2  # "a!pong" dropped, "a!live" kept, "a!other" new
    waiting.cancel()


async def test_a_full_queue_drops_its_oldest_and_says_so_once(mailboxes, caplog: pytest.LogCaptureFixture) -> None:
    sent = Sent()
    mailbox = mailboxes(sent.read, capacity=2, expiry_seconds=60)
    for n in range(5):
        sent.send("a!full", n)
    sent.send("a!other", 9)
    with caplog.at_level(logging.WARNING, logger=local_mailbox.__name__):
        assert (await mailbox.receive("a!other")) == {"n": 9}
    assert [(await mailbox.receive("a!full"))["n"] for _ in range(2)] == [3, 4]
    assert [r.getMessage() for r in caplog.records] == ["channel a!full holds 2 unread messages; dropping its oldest"]


async def test_the_pump_stops_when_nobody_waits_and_starts_again_for_the_next_receive(mailboxes) -> None:
    sent = Sent()
    mailbox = mailboxes(sent.read, capacity=100, expiry_seconds=60)
    sent.send("a!1", 1)
    assert (await mailbox.receive("a!1")) == {"n": 1}
    assert sent.reads_begun == 1  # the message was there at the first read; none more begun
    await settle()
    sent.send("a!1", 2)
    assert (await asyncio.wait_for(mailbox.receive("a!1"), 5)) == {"n": 2}


@pytest.mark.parametrize(("capacity", "expiry", "message"), [(0, 60, "capacity"), (1, 0, "expiry_seconds")])
async def test_bad_settings_are_refused(capacity: int, expiry: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LocalMailbox(Sent().read, capacity=capacity, expiry_seconds=expiry)
