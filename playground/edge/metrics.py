"""Prometheus metrics of the web process, collected where the websocket consumer relays requests.

The consumer calls three hooks, one line each: :func:`request_submitted` when it hands a request to
the workers, :func:`event_sent` for every event it sends its client (a worker's event relayed, or an
error of its own), and :func:`connection_closed`. Everything else lives here.

Exposed at ``/metrics`` (see ``playground.edge.health``) in Prometheus' text format by the maintained
client library. Each web process counts what passed through it: scrape every process (each pod or
container) on its own address, not through the load balancer, and sum in queries. Where several
processes share one port, set ``PROMETHEUS_MULTIPROC_DIR`` (the client library's multi-process
mode) and the page aggregates their files.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from playground.wire.events import FINAL_EVENTS, Frame

# Time to first token and per-stream decode rates on a CPU: tens of milliseconds to a minute in a queue.
TTFT_BUCKETS_S = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
DURATION_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
RATE_BUCKETS = (1.0, 5.0, 10.0, 20.0, 40.0, 60.0, 80.0, 120.0, 200.0, 400.0)
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# The one error that names a request without ending it: the client reused the id of a running request.
NOT_ENDING_ERRORS = frozenset({"duplicate_request"})

REQUESTS = Counter("playground_requests", "Requests handed to the inference workers", ["kind"])
IN_FLIGHT = Gauge("playground_requests_in_flight", "Requests handed to workers and not yet ended", multiprocess_mode="livesum")
WAITING = Gauge(
    "playground_requests_waiting",
    "Queue length: generations handed to workers that have not started streaming",
    multiprocess_mode="livesum",
)
RUNNING = Gauge("playground_streams_running", "Generations streaming tokens right now", multiprocess_mode="livesum")
TOKENS = Counter("playground_tokens", "Tokens streamed to clients (a beam step counts each kept beam)")
TIME_TO_FIRST_TOKEN = Histogram(
    "playground_time_to_first_token_seconds",
    "From a generation reaching the web process to its first token leaving it (queueing included)",
    buckets=TTFT_BUCKETS_S,
)
DECODE_RATE = Histogram(
    "playground_decode_tokens_per_second",
    "Each finished generation's decode rate, as its worker measured it",
    buckets=RATE_BUCKETS,
)
DURATION = Histogram(
    "playground_request_duration_seconds",
    "From a request reaching the web process to its last event",
    ["kind", "outcome"],
    buckets=DURATION_BUCKETS_S,
)
ERRORS = Counter("playground_errors", "Error events sent to clients, by error code", ["code"])
HTTP_RESPONSES = Counter("playground_http_responses", "HTTP responses (probes and metrics excluded)", ["method", "status"])


@dataclass
class _Request:
    kind: str  # generate, tokenize, inspect
    submitted_at: float  # time.monotonic()
    started: bool = False
    first_token_seen: bool = False


# channel name of a websocket connection → its requests still running, by request id
_open: dict[str, dict[str, _Request]] = {}


def request_submitted(connection: str, command: Any) -> None:
    """The consumer handed ``command`` (a checked generate, tokenize or inspect request) to the workers."""
    kind = type(command).__name__.lower()
    REQUESTS.labels(kind).inc()
    IN_FLIGHT.inc()
    if kind == "generate":
        WAITING.inc()
    _open.setdefault(connection, {})[command.request_id] = _Request(kind, time.monotonic())


def event_sent(connection: str, sent: dict[str, Any] | Frame) -> None:
    """The consumer sent an event to its client (a ``Frame``: a token, of which only the type and
    request id are read)."""
    event: dict[str, Any] = {"type": sent.type, "request_id": sent.request_id} if isinstance(sent, Frame) else sent
    kind = event.get("type")
    if kind == "error":
        ERRORS.labels(str(event.get("error", {}).get("code", "unknown"))).inc()
    request = _open.get(connection, {}).get(event.get("request_id"))  # type: ignore[arg-type]
    if request is None:
        return
    if kind == "started" and not request.started:
        request.started = True
        WAITING.dec()
        RUNNING.inc()
    elif kind in ("token", "beam_step"):
        TOKENS.inc(len(event.get("beams", ())) if kind == "beam_step" else 1)
        if not request.first_token_seen:
            request.first_token_seen = True
            TIME_TO_FIRST_TOKEN.observe(time.monotonic() - request.submitted_at)
    elif kind == "done":
        rate = (event.get("timing") or {}).get("decode_tokens_per_s")
        if isinstance(rate, (int, float)) and rate > 0:
            DECODE_RATE.observe(rate)
    if kind in FINAL_EVENTS and not (kind == "error" and event["error"].get("code") in NOT_ENDING_ERRORS):
        _finish(connection, event["request_id"], "error" if kind == "error" else "ok")


def connection_closed(connection: str) -> None:
    """The socket closed: its requests are cancelled and their last events will not pass here."""
    for request_id in list(_open.get(connection, {})):
        _finish(connection, request_id, "closed")
    _open.pop(connection, None)


def _finish(connection: str, request_id: str, outcome: str) -> None:
    requests = _open.get(connection, {})
    request = requests.pop(request_id, None)
    if request is None:
        return
    if not requests:
        _open.pop(connection, None)
    IN_FLIGHT.dec()
    if request.kind == "generate":
        (RUNNING if request.started else WAITING).dec()
    DURATION.labels(request.kind, outcome).observe(time.monotonic() - request.submitted_at)


def http_response(method: str, status: int) -> None:
    """Counts one HTTP response (unknown methods share one label: no unbounded label values)."""
    HTTP_RESPONSES.labels(method if method in HTTP_METHODS else "other", str(status)).inc()


def exposition() -> tuple[bytes, str]:
    """The metrics page's body and content type: this process's registry, or every process's
    files in multi-process mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
