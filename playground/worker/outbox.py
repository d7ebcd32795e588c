"""Events from the decode loop's thread to the worker's event loop, handed over in bursts.

A batch of 8 streams emits 8 token events per step, from the decode thread. Each
``loop.call_soon_threadsafe`` wakes the event loop through its self-pipe (a write on the decode
thread, a read and a scheduling pass on the loop, and the GIL handed back and forth while the decode
thread still samples the step's other rows). An ``Outbox`` wakes the loop once per burst: the
first event put after a drain schedules one drain, and the events put before that drain has run join
it. The decode loop's events are put without waking the loop at all (``wake=False``) and handed
over at the end of each step (``flush_outboxes``, the scheduler's ``after_step``): the loop then
relays them while the decode thread is inside the next decoder call, which does not hold the GIL,
instead of taking the GIL from it in the middle of the step's sampling. Each event still reaches
its own job's queue, in the order it was put.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any
from weakref import WeakKeyDictionary


class Outbox:
    """One event loop's inbound events from other threads (see the module)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._pending: list[tuple[asyncio.Queue[Any], Any]] = []
        self._lock = threading.Lock()
        self._drain_scheduled = False

    def put(self, queue: asyncio.Queue[Any], item: Any, wake: bool = True) -> None:
        """From any thread: ``item`` goes to ``queue`` on the loop's next drain, which ``wake``
        schedules now (one already scheduled takes it too); without ``wake`` it waits for the next
        ``flush``. Raises ``RuntimeError`` when the loop has closed (nobody will read it)."""
        if self.loop.is_closed():
            raise RuntimeError("the event loop has closed")
        with self._lock:
            self._pending.append((queue, item))
            if not wake or self._drain_scheduled:
                return
            self._drain_scheduled = True
        self._schedule_drain()

    def flush(self) -> None:
        """From any thread: schedules a drain for the items waiting, if any and none is scheduled."""
        with self._lock:
            if not self._pending or self._drain_scheduled:
                return
            self._drain_scheduled = True
        self._schedule_drain()

    def _schedule_drain(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self._drain)
        except RuntimeError:
            with self._lock:
                self._drain_scheduled = False
            raise

    def _drain(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
            self._drain_scheduled = False
        for queue, item in pending:
            queue.put_nowait(item)


_outboxes: WeakKeyDictionary[asyncio.AbstractEventLoop, Outbox] = WeakKeyDictionary()
_outboxes_lock = threading.Lock()  # made on the loops' threads, flushed from the decode loop's


def outbox() -> Outbox:
    """The running event loop's outbox (one per loop: the worker's, or each test's)."""
    loop = asyncio.get_running_loop()
    with _outboxes_lock:
        box = _outboxes.get(loop)
        if box is None:
            box = _outboxes[loop] = Outbox(loop)
        return box


def flush_outboxes() -> None:
    """Every live event loop's waiting items on their way (the decode loop calls it after each
    step); a loop that has closed meanwhile has nobody to read them."""
    with _outboxes_lock:
        boxes = list(_outboxes.values())
    for box in boxes:
        try:
            box.flush()
        except RuntimeError:
            pass
