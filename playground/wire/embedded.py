"""The embedded default's one link from the web side to the worker: a front door calls
``ensure_worker()`` before it sends a request or a ping, and what that starts was provided at
start-up by the app config (``PlaygroundConfig.ready`` provides ``playground.worker.consumer``'s
``ensure_embedded_worker``, which starts one in-process worker per event loop when
``settings.INFERENCE["EMBEDDED_WORKER"]`` asks for it). So no web module imports the worker.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable


class _Starter:
    def __init__(self) -> None:
        self.start: Callable[[], None] = lambda: None  # until the app config provides the worker's


_starter = _Starter()


def provide(start: Callable[[], None]) -> None:
    """Called once, by the app config: how to start the embedded worker on the running event loop."""
    _starter.start = start


def ensure_worker() -> None:
    """Starts the embedded worker on this event loop if it is not running (and settings want one).
    Run in a fresh context: the worker outlives the request that started it, whose context (asgiref's
    executor for the request's sync calls) is shut down when the request ends."""
    contextvars.Context().run(_starter.start)
