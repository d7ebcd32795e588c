"""A load test for any deployment: N websocket clients generating at once, every stream checked.

``python manage.py loadtest --url ws://host:port --clients 32 --tokens 100`` (the command is a thin
shell over :func:`run` and :func:`format_summary`; docs/loadtest.md). Each client opens its own
websocket to ``/ws/generate/`` with an ``Origin`` the server accepts (its own, by default: the
URL's host with ``http``/``https``), sends one ``generate`` and reads its events to the end.

Every stream is checked as it arrives (:class:`StreamCheck`): ``started`` once and before any token;
each sample's token indices contiguous from 0 (nothing lost, nothing duplicated, in order); the
stream ends with ``done`` or an ``error`` that carries a code and a message; nothing follows its
end; the ``done``'s token counts agree with the tokens received (per sample, the usage totals) and
its text is the received pieces followed by its tail; never more than ``max_tokens`` tokens. A
stream whose connection closes or goes silent before its end is broken too.

Figures (:class:`Summary`): aggregate tokens/s (every token received over the wall time from the
clients opening their connections to the last end), per-stream decode tokens/s, time to first token (from sending the
``generate`` to its first token: waiting, prefill, first step) and the gaps between a stream's
tokens, each as p50/p95/p99, the ``error`` codes counted, the batch rows the server reported (the
``batch`` field of token events, when the worker sends it) and this machine's load average.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

GENERATE_PATH = "/ws/generate/"
END_TYPES = ("done", "error")
QUANTILES = (50, 95, 99)
PROBLEMS_SHOWN = 20  # broken streams listed in the text summary (all are in the JSON)
PROGRESS_S = 5.0  # a progress line this often while the clients run


class ConfigError(ValueError):
    """A load-test setting that cannot work (a bad URL, a non-positive count)."""


@dataclass(frozen=True)
class LoadConfig:
    url: str  # the websocket endpoint, ws:// or wss://, path /ws/generate/
    origin: str  # the Origin header sent with every handshake
    clients: int
    tokens: int  # max_tokens of every generate
    prompt: str = "The capital of France is"
    seed: int | None = None  # client i uses seed + i; None: the server draws one per stream
    temperature: float | None = None  # None: the server's default
    ignore_eos: bool = True  # every stream generates exactly `tokens`, so runs are comparable
    timeout_s: float = 300.0  # a stream that has not ended by then is broken
    # further headers on every handshake, e.g. X-Forwarded-Proto: https as a TLS-terminating proxy
    # sends it to a server with production settings (parse_headers)
    headers: tuple[tuple[str, str], ...] = ()

    def generate_frame(self, client: int) -> dict[str, Any]:
        params: dict[str, Any] = {"max_tokens": self.tokens}
        if self.ignore_eos:
            params["ignore_eos"] = True
        if self.seed is not None:
            params["seed"] = (self.seed + client) % 2**63
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return {"type": "generate", "request_id": request_id(client), "prompt": self.prompt, "params": params}


def request_id(client: int) -> str:
    return f"load-{client}"


def endpoint(url: str) -> str:
    """``ws://host:port`` (or ``http://…``) as the generate endpoint ``ws://host:port/ws/generate/``."""
    parts = urlsplit(url.strip())
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme.lower(), parts.scheme.lower())
    if scheme not in ("ws", "wss") or not parts.hostname:
        raise ConfigError(f"--url must be ws://host[:port] or wss://host[:port], got {url!r}")
    path = parts.path if parts.path not in ("", "/") else GENERATE_PATH
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


def parse_headers(values: list[str]) -> tuple[tuple[str, str], ...]:
    """``--header "Name: value"`` options as (name, value) pairs."""
    pairs = []
    for value in values:
        name, colon, text = value.partition(":")
        if not colon or not name.strip() or any(c.isspace() for c in name.strip()):
            raise ConfigError(f"--header must be 'Name: value', got {value!r}")
        pairs.append((name.strip(), text.strip()))
    return tuple(pairs)


def default_origin(url: str) -> str:
    """The origin of a page served at the socket's own address (what playground/edge/origin.py accepts)."""
    parts = urlsplit(url)
    return urlunsplit(("https" if parts.scheme == "wss" else "http", parts.netloc, "", "", ""))


def make_config(url: str, clients: int, tokens: int, origin: str | None = None, **options: Any) -> LoadConfig:
    if clients < 1:
        raise ConfigError(f"--clients must be at least 1, got {clients}")
    if tokens < 1:
        raise ConfigError(f"--tokens must be at least 1, got {tokens}")
    if options.get("timeout_s", 1) <= 0:
        raise ConfigError("--timeout must be positive")
    target = endpoint(url)
    return LoadConfig(url=target, origin=origin or default_origin(target), clients=clients, tokens=tokens, **options)


class StreamCheck:
    """One stream's events in arrival order, checked as they come; ``problems`` says what broke.

    ``feed(event, at)`` takes each parsed event with its arrival time (``time.monotonic()``);
    ``close(reason)`` records that the connection ended (or the stream timed out) and, when the
    stream had not ended, why that broke it.
    """

    def __init__(self, client: int, request_id: str, max_tokens: int, sent_at: float) -> None:
        self.client = client
        self.request_id = request_id
        self.max_tokens = max_tokens
        self.sent_at = sent_at
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.end: dict[str, Any] | None = None  # the `done` or `error` event
        self.token_times: list[float] = []  # arrival of every token event, any sample
        self.pieces: dict[int, list[str]] = {}  # sample → its token texts, by index
        self.batch_rows: list[int] = []  # `batch.rows` of each token event that has one
        self.queued_events = 0
        self.closed = False  # the connection ended (or the stream timed out)
        self.problems: list[str] = []

    @property
    def ended(self) -> bool:
        return self.end is not None

    @property
    def tokens(self) -> int:
        return sum(len(pieces) for pieces in self.pieces.values())

    @property
    def error_code(self) -> str | None:
        if self.end is None or self.end.get("type") != "error":
            return None
        return str((self.end.get("error") or {}).get("code"))

    @property
    def broken(self) -> bool:
        return bool(self.problems)

    def feed(self, event: Any, at: float) -> None:
        if not isinstance(event, dict):
            self.problems.append(f"a frame that is not a JSON object: {str(event)[:80]}")
            return
        kind = event.get("type")
        if event.get("request_id") != self.request_id:
            self.problems.append(f"a {kind!r} event for request {event.get('request_id')!r}, not {self.request_id!r}")
            return
        if self.end is not None:
            self.problems.append(f"a {kind!r} event after the stream's {self.end['type']!r}")
            return
        if kind == "started":
            self._started(at)
        elif kind == "token":
            self._token(event, at)
        elif kind == "done":
            self.end, self.ended_at = event, at
            self._done(event)
        elif kind == "error":
            self.end, self.ended_at = event, at
            self._error(event)
        elif kind == "queued":
            self.queued_events += 1
        # Other event types (future additions) are not this check's business.

    def close(self, reason: str) -> None:
        self.closed = True
        if self.end is None:
            self.problems.append(f"{reason} before done or error ({self.tokens} tokens received)")

    def _started(self, at: float) -> None:
        if self.started_at is not None:
            self.problems.append("a second 'started'")
        self.started_at = at

    def _token(self, event: dict[str, Any], at: float) -> None:
        if self.started_at is None:
            self.problems.append("a token before 'started'")
            self.started_at = at  # reported once
        sample, index = event.get("sample", 0), event.get("index")
        pieces = self.pieces.setdefault(sample, [])
        if not isinstance(index, int) or index != len(pieces):
            lost = f" ({index - len(pieces)} lost)" if isinstance(index, int) and index > len(pieces) else ""
            self.problems.append(f"sample {sample}: token index {index!r} where {len(pieces)} was due{lost}")
        pieces.append(str(event.get("text", "")))
        self.token_times.append(at)
        if len(pieces) > self.max_tokens:
            self.problems.append(f"sample {sample}: {len(pieces)} tokens, more than max_tokens {self.max_tokens}")
        rows = (event.get("batch") or {}).get("rows")
        if isinstance(rows, int):
            self.batch_rows.append(rows)

    def _done(self, event: dict[str, Any]) -> None:
        if self.started_at is None:
            self.problems.append("'done' without 'started'")
        counts = {sample: len(pieces) for sample, pieces in self.pieces.items()}
        samples = event.get("samples") or [{"sample": 0, **event}]
        for entry in samples:
            sample = entry.get("sample", 0)
            reported = entry.get("completion_tokens")
            received = counts.get(sample, 0)
            if reported is not None and reported != received:
                self.problems.append(f"sample {sample}: done counts {reported} tokens, {received} received")
            text = "".join(self.pieces.get(sample, [])) + str(entry.get("tail", ""))
            if "text" in entry and entry["text"] != text:
                self.problems.append(f"sample {sample}: done's text is not the received pieces and its tail")
            if entry.get("reason") == "max_tokens" and received != self.max_tokens:
                self.problems.append(f"sample {sample}: reason max_tokens after {received} of {self.max_tokens} tokens")
        usage = event.get("usage") or {}
        if usage.get("completion_tokens") is not None and usage["completion_tokens"] != counts.get(0, 0):
            self.problems.append(f"usage.completion_tokens {usage['completion_tokens']}, {counts.get(0, 0)} received")
        total = usage.get("total_completion_tokens")
        if total is not None and total != self.tokens:
            self.problems.append(f"usage.total_completion_tokens {total}, {self.tokens} received")

    def _error(self, event: dict[str, Any]) -> None:
        error = event.get("error")
        if not isinstance(error, dict) or not error.get("code") or not error.get("message"):
            self.problems.append(f"an error without a code and a message: {json.dumps(event)[:120]}")

    # Timing, in seconds.

    @property
    def time_to_first_token(self) -> float | None:
        return self.token_times[0] - self.sent_at if self.token_times else None

    @property
    def gaps(self) -> list[float]:
        return [b - a for a, b in zip(self.token_times, self.token_times[1:])]

    @property
    def decode_rate(self) -> float | None:
        """Tokens per second after the first token (the decode phase), when there are two or more."""
        if len(self.token_times) < 2 or self.token_times[-1] <= self.token_times[0]:
            return None
        return (len(self.token_times) - 1) / (self.token_times[-1] - self.token_times[0])


async def run_client(config: LoadConfig, client: int, check: StreamCheck | None = None) -> StreamCheck:
    """One client: its own socket, one generate, every event checked (into `check`, or a new one)
    until the stream ends."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

    frame = config.generate_frame(client)
    check = check or StreamCheck(client, frame["request_id"], config.tokens, time.monotonic())
    deadline = check.sent_at + config.timeout_s
    try:
        async with connect(
            config.url,
            origin=config.origin,
            additional_headers=config.headers,
            compression=None,
            proxy=None,
            open_timeout=config.timeout_s,
            ping_timeout=60,
        ) as socket:
            check.sent_at = time.monotonic()
            await socket.send(json.dumps(frame))
            while not check.ended:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    check.close(f"no event for {config.timeout_s:g} s (--timeout)")
                    break
                try:
                    text = await asyncio.wait_for(socket.recv(), remaining)
                except TimeoutError:
                    continue
                at = time.monotonic()
                try:
                    event = json.loads(text)
                except (TypeError, ValueError):
                    event = text
                check.feed(event, at)
    except InvalidStatus as error:
        check.close(f"the handshake was refused (HTTP {error.response.status_code}; is --origin allowed?)")
    except ConnectionClosed as error:
        check.close(f"the connection closed ({error.rcvd.code if error.rcvd else 'no close frame'})")
    except (InvalidHandshake, OSError, TimeoutError) as error:
        check.close(f"could not connect: {type(error).__name__}: {error}")
    return check


async def run_load(config: LoadConfig, progress: Callable[[str], None] | None = None) -> Summary:
    """Runs every client at once and summarizes their streams; `progress` gets a line every
    PROGRESS_S seconds while they run."""
    began = time.monotonic()
    checks = [StreamCheck(c, request_id(c), config.tokens, began) for c in range(config.clients)]
    reporter = asyncio.ensure_future(_report_progress(checks, began, progress)) if progress else None
    try:
        await asyncio.gather(*(run_client(config, check.client, check) for check in checks))
    finally:
        if reporter is not None:
            reporter.cancel()
    wall = time.monotonic() - began
    return summarize(config, checks, wall)


async def _report_progress(checks: list[StreamCheck], began: float, progress: Callable[[str], None]) -> None:
    while True:
        await asyncio.sleep(PROGRESS_S)
        ended = sum(1 for c in checks if c.ended or c.closed)
        streaming = sum(1 for c in checks if c.tokens and not c.ended)
        tokens = sum(c.tokens for c in checks)
        progress(
            f"… {time.monotonic() - began:.0f} s: {ended}/{len(checks)} streams ended, {streaming} streaming, {tokens} tokens"
        )


def run(config: LoadConfig, progress: Callable[[str], None] | None = None) -> Summary:
    return asyncio.run(run_load(config, progress))


@dataclass
class Summary:
    config: LoadConfig
    wall_s: float
    streams: int
    done: int
    errors: Counter[str]
    broken: list[StreamCheck]
    tokens: int
    aggregate_rate: float
    stream_rates: dict[str, float]  # min and the quantiles of per-stream decode tokens/s
    ttft_ms: dict[str, float]
    gap_ms: dict[str, float]
    batch_rows: dict[str, float]  # max and mean rows per step the server reported (empty when none)
    queued_events: int
    load_average: tuple[float, float, float] | None = field(default=None)

    @property
    def exit_status(self) -> int:
        """0: every stream ended with done; 1: a stream broke; 2: none broke but some ended with an error."""
        if self.broken:
            return 1
        return 2 if self.errors else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.config.url,
            "clients": self.config.clients,
            "tokens_per_stream": self.config.tokens,
            "wall_s": round(self.wall_s, 3),
            "streams": {"total": self.streams, "done": self.done, "error": sum(self.errors.values()), "broken": len(self.broken)},
            "errors_by_code": dict(self.errors),
            "tokens": self.tokens,
            "aggregate_tokens_per_s": round(self.aggregate_rate, 2),
            "stream_tokens_per_s": self.stream_rates,
            "time_to_first_token_ms": self.ttft_ms,
            "inter_token_ms": self.gap_ms,
            "batch_rows": self.batch_rows,
            "queued_events": self.queued_events,
            "broken": [{"client": c.client, "request_id": c.request_id, "problems": c.problems} for c in self.broken],
            "load_average": self.load_average,
            "exit_status": self.exit_status,
        }


def quantiles(values: list[float], scale: float = 1.0, digits: int = 1) -> dict[str, float]:
    """p50/p95/p99 and max (and min) of `values` times `scale`; empty when there are none."""
    if not values:
        return {}
    data = np.asarray(values, dtype=np.float64) * scale  # (k,)
    out = {"min": round(float(data.min()), digits)}
    out |= {f"p{q}": round(float(np.percentile(data, q)), digits) for q in QUANTILES}
    out["max"] = round(float(data.max()), digits)
    return out


def summarize(config: LoadConfig, checks: list[StreamCheck], wall_s: float) -> Summary:
    tokens = sum(c.tokens for c in checks)
    rows = [r for c in checks for r in c.batch_rows]
    rates = [rate for c in checks if (rate := c.decode_rate) is not None]
    return Summary(
        config=config,
        wall_s=wall_s,
        streams=len(checks),
        done=sum(1 for c in checks if c.end is not None and c.end["type"] == "done" and not c.broken),
        errors=Counter(code for c in checks if (code := c.error_code) is not None),
        broken=[c for c in checks if c.broken],
        tokens=tokens,
        aggregate_rate=tokens / wall_s if wall_s > 0 else 0.0,
        stream_rates=quantiles(rates),
        ttft_ms=quantiles([t for c in checks if (t := c.time_to_first_token) is not None], 1000),
        gap_ms=quantiles([g for c in checks for g in c.gaps], 1000),
        batch_rows={"max": max(rows), "mean": round(sum(rows) / len(rows), 2)} if rows else {},
        queued_events=sum(c.queued_events for c in checks),
        load_average=os.getloadavg() if hasattr(os, "getloadavg") else None,
    )


def _line(figures: dict[str, float], unit: str) -> str:
    if not figures:
        return "–"
    return "  ".join(f"{name} {value:g}" for name, value in figures.items()) + f" {unit}"


def format_summary(summary: Summary) -> str:
    """The summary as a few lines of text for a person."""
    c = summary.config
    seed = "drawn by the server" if c.seed is None else f"{c.seed} + client number"
    lines = [
        f"loadtest {c.url} (Origin {c.origin})",
        f"  {c.clients} clients × {c.tokens} tokens, prompt {json.dumps(c.prompt)[:60]}, seed {seed}",
        f"streams: {summary.streams} — {summary.done} done, {sum(summary.errors.values())} ended with an error, "
        f"{len(summary.broken)} broken",
        f"tokens: {summary.tokens} in {summary.wall_s:.2f} s → aggregate {summary.aggregate_rate:.1f} tokens/s",
        f"per-stream decode tokens/s: {_line(summary.stream_rates, 'tokens/s')}",
        f"time to first token: {_line(summary.ttft_ms, 'ms')}",
        f"inter-token latency: {_line(summary.gap_ms, 'ms')}",
    ]
    if summary.batch_rows:
        lines.append(
            f"batch rows per step (server's batch field): max {summary.batch_rows['max']}, mean {summary.batch_rows['mean']}"
        )
    if summary.queued_events:
        lines.append(f"queued events received: {summary.queued_events}")
    lines.append(
        "errors by code: "
        + (", ".join(f"{code} ×{count}" for code, count in summary.errors.most_common()) if summary.errors else "none")
    )
    if summary.broken:
        lines.append("broken streams:")
        for check in summary.broken[:PROBLEMS_SHOWN]:
            lines.append(f"  client {check.client} ({check.request_id}): " + "; ".join(check.problems[:3]))
        if len(summary.broken) > PROBLEMS_SHOWN:
            lines.append(f"  … and {len(summary.broken) - PROBLEMS_SHOWN} more (--json lists them all)")
    if summary.load_average is not None:
        lines.append("load average of this machine: " + " ".join(f"{x:.2f}" for x in summary.load_average))
    return "\n".join(lines)
