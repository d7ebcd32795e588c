"""Per-client limits across connections: how many requests one client address may have running or
waiting at once, and how fast it may send new ones (a token bucket).

One ``ClientLimits`` per web process (``client_limits()``), keyed by the client's address as the
ASGI server reports it (behind a reverse proxy, run daphne with ``--proxy-headers`` so that it is the
client's and not the proxy's). The numbers are settings (``INFERENCE["CLIENT_LIMITS"]``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from django.conf import settings


@dataclass(frozen=True)
class Refusal:
    """Why a request was refused: an ``error`` code, a message, and when a retry may succeed."""

    code: str
    message: str
    retry_after: float | None  # seconds; None: when one of the client's requests has ended


@dataclass
class _Client:
    active: int = 0
    tokens: float = 0.0
    refilled_at: float = field(default_factory=time.monotonic)


class ClientLimits:
    """``max_active`` requests at once per client; ``rate`` new requests per second on average,
    with bursts of up to ``burst``."""

    def __init__(self, max_active: int, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if max_active < 1 or rate <= 0 or burst < 1:
            raise ValueError(f"client limits must be positive, got max_active={max_active}, rate={rate}, burst={burst}")
        self.max_active = max_active
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._clients: dict[str, _Client] = {}
        self._lock = threading.Lock()  # the consumers of one process may run on several event loops

    def admit(self, client: str) -> Refusal | None:
        """Counts one new request of ``client``, or says why it may not run now."""
        with self._lock:
            now = self._clock()
            state = self._clients.get(client)
            if state is None:
                state = self._clients[client] = _Client(tokens=float(self.burst), refilled_at=now)
            state.tokens = min(float(self.burst), state.tokens + (now - state.refilled_at) * self.rate)
            state.refilled_at = now
            if state.active >= self.max_active:
                return Refusal(
                    "too_many_requests",
                    f"this client already has {state.active} requests running or waiting (at most {self.max_active} "
                    "across its connections); send more when one has ended",
                    None,
                )
            if state.tokens < 1:
                wait = round((1 - state.tokens) / self.rate, 3)
                return Refusal(
                    "rate_limited",
                    f"this client sends requests faster than {self.rate:g} per second (bursts of {self.burst}); "
                    f"retry in {wait:g} s",
                    wait,
                )
            state.tokens -= 1
            state.active += 1
            return None

    def release(self, client: str) -> None:
        """One of ``client``'s requests has ended (or will never be answered)."""
        with self._lock:
            state = self._clients.get(client)
            if state is None:
                return
            state.active = max(0, state.active - 1)
            now = self._clock()
            state.tokens = min(float(self.burst), state.tokens + (now - state.refilled_at) * self.rate)
            state.refilled_at = now
            if state.active == 0 and state.tokens >= self.burst:
                del self._clients[client]  # an idle client with a full bucket is a new client (keeps the table small)

    def active(self, client: str) -> int:
        with self._lock:
            state = self._clients.get(client)
            return 0 if state is None else state.active


@lru_cache(maxsize=1)
def client_limits() -> ClientLimits:
    config = settings.INFERENCE["CLIENT_LIMITS"]
    return ClientLimits(config["MAX_ACTIVE_REQUESTS"], config["REQUESTS_PER_SECOND"], config["BURST"])
