"""Stopping a decoder call in flight once nobody wants what it computes.

A request's cancel is seen between steps (its flag read before each token or prefill chunk), but a
single decoder call can take a second (a long prefill chunk, a batched step on a loaded machine),
and it runs on after a closed connection's cancel unless it is stopped. ONNX Runtime checks its run
options' ``terminate`` flag between the graph's nodes; this module sets it from the cancel path:

- ``CancelFlag``: a request's cancel flag (``set`` from any thread, read with ``is_set``) that also
  calls whoever ``watch``-es it, on the thread that raised it, the moment it rises;
- ``stopping_when(flags)``: the decoder calls made on this thread inside it run under run options
  whose ``terminate`` is set as soon as **every** flag in ``flags`` has risen (a batched call whose
  rows serve several requests stops only when none of them is wanted any more; one with a live row
  runs to its end, as it must);
- ``run_stoppable(session, binding)``: ``Decoder``'s one session call, under this thread's run
  options; a call stopped this way raises ``Terminated`` (a ``Cancelled``), any other failure
  stays what it was.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import onnxruntime as ort

from inference.errors import Cancelled

TERMINATED_MESSAGE = "terminate flag"  # in ONNX Runtime's error for a run its run options stopped


class Terminated(Cancelled):
    """A decoder call stopped mid-way by ``stopping_when``: every request it served was cancelled."""


class CancelFlag:
    """A request's cancel flag: raised once, from any thread; ``watch`` callbacks run on the
    raising thread when it rises (at once, on the watching thread, if it has already)."""

    def __init__(self) -> None:
        self._raised = threading.Event()
        self._lock = threading.Lock()
        self._watchers: dict[int, Callable[[], None]] = {}
        self._next = 0

    def is_set(self) -> bool:
        return self._raised.is_set()

    def set(self) -> None:
        with self._lock:
            if self._raised.is_set():
                return
            self._raised.set()
            watchers, self._watchers = list(self._watchers.values()), {}
        for watcher in watchers:
            watcher()

    def watch(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Calls ``callback`` once when the flag rises; returns what stops watching (a no-op after)."""
        with self._lock:
            if not self._raised.is_set():
                key, self._next = self._next, self._next + 1
                self._watchers[key] = callback
                return lambda: self._unwatch(key)
        callback()
        return lambda: None

    def _unwatch(self, key: int) -> None:
        with self._lock:
            self._watchers.pop(key, None)


_RUN_OPTIONS: contextvars.ContextVar[ort.RunOptions | None] = contextvars.ContextVar("run_options", default=None)


def run_stoppable(session: ort.InferenceSession, binding: ort.IOBinding) -> None:
    """``session.run_with_iobinding(binding)`` under the run options of the ``stopping_when`` this
    thread is in (none outside one); raises ``Terminated`` when they stopped it."""
    options = _RUN_OPTIONS.get()
    try:
        session.run_with_iobinding(binding, options)
    except RuntimeError as error:
        if is_termination(error, options):
            raise Terminated("every request this decoder call served was cancelled") from error
        raise


@contextmanager
def stopping_when(flags: Sequence[CancelFlag]) -> Iterator[ort.RunOptions]:
    """The decoder calls made inside run under run options that terminate once every one of
    ``flags`` has risen (at once if they all have; never for no flags)."""
    options = ort.RunOptions()

    def risen() -> None:
        if all(flag.is_set() for flag in flags):
            options.terminate = True

    unwatch = [flag.watch(risen) for flag in flags] if flags else []
    token = _RUN_OPTIONS.set(options)
    try:
        yield options
    finally:
        _RUN_OPTIONS.reset(token)
        for stop_watching in unwatch:
            stop_watching()


def is_termination(error: BaseException, options: ort.RunOptions | None) -> bool:
    """Whether ``error``, raised by a session call under ``options``, is ONNX Runtime stopping it
    because ``stopping_when`` set their ``terminate`` (and not any other failure)."""
    return options is not None and options.terminate and isinstance(error, RuntimeError) and TERMINATED_MESSAGE in str(error)
