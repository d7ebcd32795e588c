"""A soak test for any deployment: mixed traffic for MINUTES while the server's resources are watched.

``python manage.py loadtest --url ws://host:port --soak MINUTES`` (docs/loadtest.md, "Soak"). A few
clients (``--clients``) each loop over every kind of request the playground serves, in turn:
generations of each kind (sampled, greedy, ``n`` samples, beam search, speculative, chat), a
cancel mid-stream, a socket closed mid-stream, ``inspect``, ``score``, ``tokenize``, a saved run
read back (``/r/<id>.json``), and the HTTP API (``/v1/completions``, streamed and not). Every
websocket stream is checked as ``playground.loadtest.burst.StreamCheck`` checks it; every request's
latency is timed by kind.

Every ``--sample-every`` seconds a line reports the server's resident memory and open files (of
``--server-pid`` on this machine, else the server's own ``/metrics``), the database's size
(``--database``, an SQLite file) and the latency percentiles of that window. At the end, a verdict:
resident memory grew less than ``MEMORY_GROWTH_LIMIT`` after the first tenth of the time, no request
broke (every stream ended with ``done`` or a documented error), every saved run read back, and no
traceback in the server's log (``--server-log``; unknown without it).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from playground.loadtest.burst import ConfigError, StreamCheck, default_origin, endpoint, quantiles

MEMORY_GROWTH_LIMIT = 0.05  # of the resident memory at a tenth of the time
SETTLE_FRACTION = 0.1  # the first tenth of the time warms caches and pools: growth is measured after it
LIMIT_CODES = frozenset({"busy", "rate_limited", "too_many_requests"})  # refusals by the server's limits, counted apart
# A client refused by the server's limits waits this long before its next request, as a client
# should: without it a refused request comes back in milliseconds, and the soak turns into a storm of
# refusals (seen on a quiet machine: 12,000 in 3 minutes) instead of the traffic it measures.
LIMIT_BACKOFF_S = 2.0
PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."
HTTP_TIMEOUT_S = 120.0
LONG_TOKENS = 400  # a run cancelled or closed early (fits even the tiny test model's context after the prompt)


@dataclass(frozen=True)
class SoakConfig:
    url: str  # the websocket endpoint
    origin: str
    minutes: float
    clients: int = 4
    tokens: int = 32  # max_tokens of each generation
    server_pid: int | None = None  # a server process on this machine: its memory and files read directly
    server_log: Path | None = None  # its log, searched for tracebacks
    database: Path | None = None  # an SQLite file whose size is reported
    sample_every_s: float = 30.0
    timeout_s: float = 300.0  # a request that has not ended by then is broken
    only: tuple[str, ...] = ()  # the scenarios to run (their names in ``SCENARIOS``); empty: every one
    headers: tuple[tuple[str, str], ...] = ()  # on every handshake and HTTP request (burst.parse_headers)

    @property
    def http(self) -> str:
        """The server's HTTP origin (``ws://h:p/ws/generate/`` → ``http://h:p``)."""
        parts = urlsplit(self.url)
        return urlunsplit(("https" if parts.scheme == "wss" else "http", parts.netloc, "", "", ""))


def make_soak_config(url: str, minutes: float, origin: str | None = None, **options: Any) -> SoakConfig:
    if minutes <= 0:
        raise ConfigError(f"--soak must be a positive number of minutes, got {minutes:g}")
    if options.get("clients", 1) < 1 or options.get("tokens", 1) < 1:
        raise ConfigError("--clients and --tokens must be at least 1")
    unknown = sorted(set(options.get("only", ())) - {name for name, _ in SCENARIOS})
    if unknown:
        raise ConfigError(f"--only names no scenario {unknown}; they are {', '.join(name for name, _ in SCENARIOS)}")
    target = endpoint(url)
    return SoakConfig(url=target, origin=origin or default_origin(target), minutes=minutes, **options)


@dataclass
class Outcome:
    """One request of the soak: its kind, how long it took, and what went wrong (None: nothing)."""

    kind: str
    ms: float
    problem: str | None = None
    code: str | None = None  # the error code it ended with, if any
    run_id: str | None = None  # a saved run it made


@dataclass
class Sample:
    """The server at one moment, and the traffic of the window before it."""

    at_s: float
    rss_bytes: int | None
    open_files: int | None
    database_bytes: int | None
    requests: int
    latency_ms: dict[str, dict[str, float]]  # kind → quantiles of the window

    def line(self) -> str:
        rss = "?" if self.rss_bytes is None else f"{self.rss_bytes / 2**20:.1f} MiB"
        files = "?" if self.open_files is None else str(self.open_files)
        db = "?" if self.database_bytes is None else f"{self.database_bytes / 2**20:.2f} MiB"
        kinds = "  ".join(f"{kind} p50 {q['p50']:.0f}/p95 {q['p95']:.0f}" for kind, q in sorted(self.latency_ms.items()))
        return f"{self.at_s:7.0f} s  rss {rss}  files {files}  db {db}  {self.requests} requests  ms: {kinds}"


@dataclass
class Soak:
    """What the soak saw: every outcome, every sample, and the runs it made."""

    config: SoakConfig
    outcomes: list[Outcome] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    lost_runs: list[str] = field(default_factory=list)
    tracebacks: int | None = None
    log_start: int = 0
    model: str | None = None  # the server's default model (``/v1/models``' first), which the HTTP API must name

    def memory_growth(self) -> float | None:
        """Resident memory at the end over that at the first sample past a tenth of the time, less 1."""
        settled = [s for s in self.samples if s.at_s >= SETTLE_FRACTION * self.config.minutes * 60 and s.rss_bytes]
        if len(settled) < 2:
            return None
        return settled[-1].rss_bytes / settled[0].rss_bytes - 1  # type: ignore[operator]

    def problems(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.problem is not None]

    def verdict(self) -> dict[str, Any]:
        growth = self.memory_growth()
        checks = {
            "memory_flat": growth is not None and growth < MEMORY_GROWTH_LIMIT,
            "no_broken_request": not self.problems(),
            "no_lost_run": not self.lost_runs,
            "no_traceback": self.tracebacks == 0,
        }
        return {"pass": all(checks.values()), **checks}

    def as_dict(self) -> dict[str, Any]:
        by_kind: dict[str, list[float]] = defaultdict(list)
        for outcome in self.outcomes:
            by_kind[outcome.kind].append(outcome.ms)
        growth = self.memory_growth()
        return {
            "url": self.config.url,
            "minutes": self.config.minutes,
            "clients": self.config.clients,
            "requests": Counter(o.kind for o in self.outcomes),
            "latency_ms": {kind: quantiles(values) for kind, values in sorted(by_kind.items())},
            "errors_by_code": Counter(o.code for o in self.outcomes if o.code),
            "broken": [{"kind": o.kind, "problem": o.problem} for o in self.problems()],
            "samples": [s.__dict__ for s in self.samples],
            "memory_growth": None if growth is None else round(growth, 4),
            "runs_saved": len(self.run_ids),
            "runs_lost": self.lost_runs,
            "tracebacks": self.tracebacks,
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "verdict": self.verdict(),
        }


# -- the requests


Scenario = Callable[["Client"], Awaitable[Outcome]]


class Client:
    """One soak client: runs its scenarios in turn, each on a fresh socket (a closed one is a scenario)."""

    def __init__(self, soak: Soak, number: int) -> None:
        self.soak = soak
        self.config = soak.config
        self.number = number
        self.ids = itertools.count()

    def request_id(self, kind: str) -> str:
        return f"soak-{self.number}-{kind}-{next(self.ids)}"

    async def stream(
        self, frame: dict[str, Any], kind: str, until: Callable[[dict[str, Any], StreamCheck], str | None]
    ) -> Outcome:
        """Sends ``frame`` on a fresh socket and reads its events into a ``StreamCheck`` until
        ``until(event, check)`` says what to do: None goes on, "close" closes the socket (the
        request's end is then the server's business), any other text is sent as a frame."""
        from websockets.asyncio.client import connect

        began = time.monotonic()
        check = StreamCheck(self.number, frame["request_id"], int((frame.get("params") or {}).get("max_tokens", 1)), began)
        try:
            async with connect(
                self.config.url, origin=self.config.origin, additional_headers=self.config.headers, compression=None, proxy=None
            ) as socket:
                await socket.send(json.dumps(frame))
                while not check.ended:
                    text = await asyncio.wait_for(socket.recv(), self.config.timeout_s)
                    event = json.loads(text)
                    check.feed(event, time.monotonic())
                    action = until(event, check)
                    if action == "close":
                        return Outcome(kind, (time.monotonic() - began) * 1000)
                    if action is not None:
                        await socket.send(action)
        except Exception as error:  # noqa: BLE001 — a closed, refused or silent connection breaks the request
            check.close(f"{type(error).__name__}: {error}")
        ms = (time.monotonic() - began) * 1000
        end = check.end or {}
        code = check.error_code
        problem = "; ".join(check.problems) or None
        if problem is None and code is not None and code not in LIMIT_CODES and code != "cancelled":
            problem = f"ended with error {code}: {(end.get('error') or {}).get('message')}"
        run_id = end.get("run_id") if end.get("type") == "done" else None
        if run_id:
            self.soak.run_ids.append(run_id)
        return Outcome(kind, ms, problem, code, run_id)

    async def http(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        def call() -> tuple[int, bytes]:
            data = None if body is None else json.dumps(body).encode()
            request = urllib.request.Request(
                self.config.http + path,
                data,
                method=method,
                headers={"Content-Type": "application/json", **dict(self.config.headers)},
            )
            try:
                with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
                    return response.status, response.read()
            except urllib.error.HTTPError as error:
                return error.code, error.read()

        return await asyncio.to_thread(call)


def _generate(kind: str, params: dict[str, Any] | None = None, **fields: Any) -> Scenario:
    """A generation of one kind: ``params`` over the soak's own, ``fields`` beside them in the frame."""

    async def run(client: Client) -> Outcome:
        merged = {"max_tokens": client.config.tokens, "ignore_eos": True, "temperature": 1} | (params or {})
        frame = {"type": "generate", "request_id": client.request_id(kind), "prompt": PROMPT, "params": merged} | fields
        return await client.stream(frame, kind, lambda event, check: None)

    return run


async def beams(client: Client) -> Outcome:
    """Beam search streams ``beam_step`` events, not tokens: its ``done`` is checked, not token counts."""
    params = {"max_tokens": client.config.tokens, "num_beams": 2, "temperature": 0}
    frame = {"type": "generate", "request_id": client.request_id("beams"), "prompt": PROMPT, "params": params}
    outcome = await client.stream(frame, "beams", lambda event, check: None)
    if outcome.problem and "completion_tokens" in outcome.problem:  # (no token events by design)
        outcome.problem = None
    return outcome


async def cancel(client: Client) -> Outcome:
    request_id = client.request_id("cancel")
    frame = {
        "type": "generate",
        "request_id": request_id,
        "prompt": PROMPT,
        "params": {"max_tokens": LONG_TOKENS, "ignore_eos": True},
    }
    cancel_frame = json.dumps({"type": "cancel", "request_id": request_id})
    sent = False

    def until(event: dict[str, Any], check: StreamCheck) -> str | None:
        nonlocal sent
        if event.get("type") == "token" and check.tokens >= 2 and not sent:
            sent = True
            return cancel_frame
        return None

    outcome = await client.stream(frame, "cancel", until)
    if outcome.problem is None and outcome.code not in (None, "cancelled", *LIMIT_CODES):
        outcome.problem = f"a cancelled request ended with {outcome.code}"
    return outcome


async def disconnect(client: Client) -> Outcome:
    frame = {
        "type": "generate",
        "request_id": client.request_id("disconnect"),
        "prompt": PROMPT,
        "params": {"max_tokens": LONG_TOKENS},
    }
    return await client.stream(frame, "disconnect", lambda event, check: "close" if event.get("type") == "token" else None)


def _answered(kind: str, answer: str, frame: Callable[[str], dict[str, Any]]) -> Scenario:
    async def run(client: Client) -> Outcome:
        request_id = client.request_id(kind)
        outcome = await client.stream(
            frame(request_id), kind, lambda event, check: "close" if event.get("type") == answer else None
        )
        return outcome

    return run


async def read_run(client: Client) -> Outcome:
    began = time.monotonic()
    if not client.soak.run_ids:
        return Outcome("read_run", 0.0)
    run_id = client.soak.run_ids[-1]
    status, _ = await client.http("GET", f"/r/{run_id}.json")
    problem = None if status == 200 else f"/r/{run_id}.json answered {status}"
    return Outcome("read_run", (time.monotonic() - began) * 1000, problem)


def _api(stream: bool) -> Scenario:
    kind = "api_stream" if stream else "api"

    async def run(client: Client) -> Outcome:
        began = time.monotonic()
        body = {"model": client.soak.model, "prompt": PROMPT, "max_tokens": client.config.tokens, "stream": stream}
        status, data = await client.http("POST", "/v1/completions", body)
        ms = (time.monotonic() - began) * 1000
        if status == 429:
            return Outcome(kind, ms, None, "busy")
        if status != 200:
            return Outcome(kind, ms, f"/v1/completions answered {status}: {data[:200]!r}")
        if stream and not data.rstrip().endswith(b"data: [DONE]"):
            return Outcome(kind, ms, "the stream did not end with [DONE]")
        return Outcome(kind, ms)

    return run


SCENARIOS: tuple[tuple[str, Scenario], ...] = (
    ("sampled", _generate("sampled")),
    ("inspect", _answered("inspect", "inspection", lambda r: {"type": "inspect", "request_id": r, "prompt": PROMPT})),
    ("greedy", _generate("greedy", params={"temperature": 0})),
    ("cancel", cancel),
    ("samples", _generate("samples", params={"n": 2})),
    ("score", _answered("score", "prompt_scores", lambda r: {"type": "score", "request_id": r, "prompt": PROMPT})),
    ("beams", beams),
    ("disconnect", disconnect),
    ("speculative", _generate("speculative", params={"temperature": 0, "speculative": {"draft": "prompt_lookup"}})),
    ("tokenize", _answered("tokenize", "tokens", lambda r: {"type": "tokenize", "request_id": r, "text": PROMPT})),
    ("chat", _generate("chat", mode="chat")),
    ("read_run", read_run),
    ("api", _api(False)),
    ("api_stream", _api(True)),
)


# -- the server's resources


def _resources(config: SoakConfig) -> tuple[int | None, int | None]:
    """The server's resident memory and open files: of ``server_pid`` on this machine, else its /metrics."""
    if config.server_pid is not None:
        import psutil

        process = psutil.Process(config.server_pid)
        return process.memory_info().rss, process.num_fds()
    try:
        request = urllib.request.Request(config.http + "/metrics", headers=dict(config.headers))
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
    except OSError:
        return None, None
    figures = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("process_resident_memory_bytes", "process_open_fds"):
            figures[name] = int(float(value))
    return figures.get("process_resident_memory_bytes"), figures.get("process_open_fds")


def _database_bytes(config: SoakConfig) -> int | None:
    if config.database is None:
        return None
    return sum(path.stat().st_size for path in (config.database, Path(f"{config.database}-wal")) if path.exists())


async def _sample(soak: Soak, began: float, seen: int) -> int:
    """Adds a sample of the server and of the outcomes since ``seen``; returns the new count."""
    rss, files = await asyncio.to_thread(_resources, soak.config)
    window: dict[str, list[float]] = defaultdict(list)
    for outcome in soak.outcomes[seen:]:
        window[outcome.kind].append(outcome.ms)
    sample = Sample(
        round(time.monotonic() - began, 1),
        rss,
        files,
        _database_bytes(soak.config),
        len(soak.outcomes) - seen,
        {kind: quantiles(values, digits=0) for kind, values in window.items()},
    )
    soak.samples.append(sample)
    return len(soak.outcomes)


# -- the run


def pause_after(outcome: Outcome) -> float:
    """Seconds a client waits before its next request: ``LIMIT_BACKOFF_S`` after a refusal by the
    server's limits, else none."""
    return LIMIT_BACKOFF_S if outcome.code in LIMIT_CODES else 0.0


async def run_soak(config: SoakConfig, progress: Callable[[str], None] | None = None) -> Soak:
    soak = Soak(config)
    if config.server_log is not None and config.server_log.exists():
        soak.log_start = config.server_log.stat().st_size
    status, models = await Client(soak, -1).http("GET", "/v1/models")
    soak.model = json.loads(models)["data"][0]["id"] if status == 200 else None
    began = time.monotonic()
    deadline = began + config.minutes * 60

    async def client_loop(number: int) -> None:
        client = Client(soak, number)
        chosen = [(name, scenario) for name, scenario in SCENARIOS if not config.only or name in config.only]
        for _, scenario in itertools.islice(itertools.cycle(chosen), number, None):
            if time.monotonic() >= deadline:
                return
            outcome = await scenario(client)
            soak.outcomes.append(outcome)
            await asyncio.sleep(pause_after(outcome))

    seen = await _sample(soak, began, 0)
    clients = asyncio.gather(*(client_loop(n) for n in range(config.clients)))
    while not clients.done():
        await asyncio.wait({clients}, timeout=config.sample_every_s)
        seen = await _sample(soak, began, seen)
        if progress is not None:
            progress(soak.samples[-1].line())
    await clients
    soak.lost_runs = await _lost_runs(soak)
    soak.tracebacks = _tracebacks(config.server_log, soak.log_start)
    return soak


async def _lost_runs(soak: Soak) -> list[str]:
    """The runs a ``done`` announced that the server cannot show."""
    client = Client(soak, -1)
    lost = []
    for run_id in soak.run_ids:
        status, _ = await client.http("GET", f"/r/{run_id}.json")
        if status != 200:
            lost.append(run_id)
    return lost


def _tracebacks(log: Path | None, start: int) -> int | None:
    if log is None or not log.exists():
        return None
    with open(log, "rb") as text:
        text.seek(start)
        return text.read().count(b"Traceback")


def run(config: SoakConfig, progress: Callable[[str], None] | None = None) -> Soak:
    return asyncio.run(run_soak(config, progress))


def format_soak(soak: Soak) -> str:
    figures = soak.as_dict()
    lines = [f"soak {soak.config.url} for {soak.config.minutes:g} min, {soak.config.clients} clients"]
    lines += [sample.line() for sample in soak.samples]
    lines.append("requests: " + ", ".join(f"{kind} {n}" for kind, n in sorted(figures["requests"].items())))
    for kind, q in figures["latency_ms"].items():
        lines.append(f"  {kind}: p50 {q['p50']} p95 {q['p95']} p99 {q['p99']} max {q['max']} ms")
    lines.append(f"errors by code: {dict(figures['errors_by_code']) or 'none'}")
    lines.append(
        f"broken: {len(figures['broken'])}" + "".join(f"\n  {b['kind']}: {b['problem']}" for b in figures["broken"][:20])
    )
    growth = figures["memory_growth"]
    lines.append(
        f"resident memory growth after the first {SETTLE_FRACTION:.0%}: " + ("?" if growth is None else f"{growth:+.1%}")
    )
    lines.append(f"runs saved {figures['runs_saved']}, lost {len(figures['runs_lost'])}")
    lines.append(
        f"tracebacks in the server log: {'unknown (no --server-log)' if figures['tracebacks'] is None else figures['tracebacks']}"
    )
    lines.append(f"load average of this machine: {' '.join(str(x) for x in figures['load_average'])}")
    verdict = figures["verdict"]
    lines.append(
        "verdict: "
        + ("PASS" if verdict["pass"] else "FAIL")
        + " "
        + json.dumps({k: v for k, v in verdict.items() if k != "pass"})
    )
    return "\n".join(lines)
