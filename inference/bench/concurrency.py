"""Concurrent streams through the batching scheduler, in-process: what continuous batching buys.

    python -m inference.bench --concurrency 1,2,4,8,16 [--tokens 48] [--requests-per-stream 2]
                              [--max-batch 8] [--threads 2] [--rounds 3] [--spinning on|off]

For each concurrency C, C clients each send ``--requests-per-stream`` short prompts one after the
other (a client sends its next request when its last ends), to one ``Scheduler`` with
``--max-batch`` rows running on its own thread, as a worker runs it. Every request is a websocket
run's work: the full sampler chain (temperature 1, seeded), top-20 alternatives traced, text
streamed; its length is drawn around ``--tokens`` so requests end at different times and new ones
join while the others decode. Figures per C: aggregate tokens/s (every token over the wall time;
``aggregate_all_busy``: only while all C clients still have a request out, i.e. until the first
client's last request ends — after that fewer than C streams run, as the last requests drain),
per-stream tokens/s (each request's tokens after its first over the time they took; median),
the process's CPU time per token (every thread: the decode loop's and ONNX Runtime's; steadier
than the rates on a shared machine, where the wall clock measures the others' load too),
time to first token from submission, p50 and p95 (includes waiting for a row; ``ttft_joining``:
only the requests sent while the others decode, after each client's first), the process's
resident memory after the level and its peak. The levels are measured in turn, ``--rounds``
times interleaved; each figure is the median over rounds, and ``ratios_to_concurrency_1`` divide
by the C = 1 figures of the same round. The machine is shared: the load average is reported
before and after.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inference.batching.scheduler import Scheduler, Ticket, serve_in_thread
from inference.decoding.generation import Finished, GenerationRequest, TokenStep
from inference.decoding.loop_params import LoopParams
from inference.runtime import Runtime
from inference.sampling import SamplingParams

PROMPTS = (
    "The capital of France is",
    "Once upon a time",
    "Write a haiku about the sea:",
    "The three primary colours are",
    "In 1969, the first people to walk on the Moon",
    "A good recipe for pancakes starts with",
    "The quick brown fox",
    "Python is a programming language that",
)
TOP_N = 20  # alternatives a websocket run traces per token


@dataclass
class Timing:
    """One request's clock: submitted, first token, last token, tokens."""

    submitted: float
    joining: bool  # sent while the others decode (not in the level's first wave)
    first: float | None = None
    last: float | None = None
    tokens: int = 0


@dataclass
class Level:
    """One concurrency level's clients, running until each has sent its requests."""

    scheduler: Scheduler
    concurrency: int
    requests_per_stream: int
    tokens: int
    timings: list[Timing] = field(default_factory=list)
    left: int = 0
    token_times: list[float] = field(default_factory=list)  # every token's arrival, in order
    all_busy_until: float | None = None  # when the first client ended its last request
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    def run(self) -> dict[str, Any]:
        self.left = self.concurrency * self.requests_per_stream
        began, cpu_began = time.perf_counter(), time.process_time()
        for client in range(self.concurrency):
            self._send(client, 0)
        self.done.wait()
        if self.error is not None:
            raise RuntimeError(f"a benchmark request failed: {self.error}") from self.error
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu_began
        total = sum(t.tokens for t in self.timings)
        busy = (self.all_busy_until or time.perf_counter()) - began
        busy_tokens = sum(1 for t in self.token_times if t - began <= busy)
        ttft = [(t.first - t.submitted) * 1000 for t in self.timings if t.first is not None]
        joining = [(t.first - t.submitted) * 1000 for t in self.timings if t.first is not None and t.joining]
        rates = [(t.tokens - 1) / (t.last - t.first) for t in self.timings if t.first and t.last and t.last > t.first]
        return {
            "requests": len(self.timings),
            "tokens": total,
            "aggregate_tokens_per_s": round(total / wall, 1),
            "aggregate_all_busy_tokens_per_s": round(busy_tokens / busy, 1),
            "cpu_ms_per_token": round(1000 * cpu / total, 2),
            "per_stream_tokens_per_s": round(float(np.median(rates)), 1),
            "ttft_ms_p50": round(float(np.percentile(ttft, 50)), 1),
            "ttft_ms_p95": round(float(np.percentile(ttft, 95)), 1),
            "ttft_joining_ms_p50": percentile(joining, 50),
            "ttft_joining_ms_p95": percentile(joining, 95),
            "rss_mb": round(rss_mb()),
            "peak_rss_mb": round(peak_rss_mb()),
        }

    def _send(self, client: int, sent: int) -> None:
        length = int(self.rng.integers(max(1, self.tokens // 2), self.tokens * 3 // 2 + 1))
        request = GenerationRequest(
            PROMPTS[(client + sent) % len(PROMPTS)],
            sampling=SamplingParams(temperature=1.0, seed=client * 1000 + sent),
            loop=LoopParams(max_tokens=length, ignore_eos=True),
            top_n=TOP_N,
        )
        timing = Timing(time.perf_counter(), joining=sent > 0)
        self.timings.append(timing)

        def deliver(item: Any, _info: Any) -> None:
            now = time.perf_counter()
            if isinstance(item, TokenStep):
                timing.first = timing.first or now
                timing.last = now
                timing.tokens += 1
                self.token_times.append(now)
            elif isinstance(item, Finished):
                self._ended(client, sent)

        def fail(error: BaseException) -> None:
            self.error = error
            self.done.set()

        self.scheduler.submit(Ticket(request, lambda: False, deliver, fail))

    def _ended(self, client: int, sent: int) -> None:
        self.left -= 1
        if sent + 1 < self.requests_per_stream:
            self._send(client, sent + 1)
            return
        self.all_busy_until = self.all_busy_until or time.perf_counter()
        if self.left == 0:
            self.done.set()


def percentile(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


def rss_mb() -> float:
    """Resident memory of this process now, in MB."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_rss_mb() -> float:
    """The most resident memory this process has had, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(
    runtime: Runtime, levels: list[int], tokens: int, requests_per_stream: int, max_batch: int, rounds: int = 1
) -> dict[str, Any]:
    """Every concurrency level in turn on one scheduler, ``rounds`` times interleaved (the load of
    a shared machine drifts): each figure's median over rounds, and the ratios to concurrency 1
    taken round by round."""
    load_before = os.getloadavg()
    scheduler = Scheduler(runtime, max_batch=max_batch)
    _, stop = serve_in_thread(scheduler, "bench-decode")
    taken: dict[int, list[dict[str, Any]]] = {c: [] for c in levels}
    try:
        Level(scheduler, 1, 1, 8).run()  # warm-up: first runs allocate and pre-pack
        for _ in range(rounds):
            for c in levels:
                taken[c].append(Level(scheduler, c, requests_per_stream, tokens).run())
    finally:
        stop.set()
    report: dict[str, Any] = {
        "max_batch": max_batch,
        "tokens_per_request": f"{max(1, tokens // 2)}..{tokens * 3 // 2}",
        "requests_per_stream": requests_per_stream,
        "rounds": rounds,
        "levels": {str(c): {key: _median([r[key] for r in runs]) for key in runs[0]} for c, runs in taken.items()},
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
    }
    if 1 in taken:
        report["ratios_to_concurrency_1"] = {
            str(c): {
                kind: _median([r[key] / b[key] for r, b in zip(runs, taken[1])])
                for kind, key in (
                    ("aggregate", "aggregate_tokens_per_s"),
                    ("aggregate_all_busy", "aggregate_all_busy_tokens_per_s"),
                    ("per_stream", "per_stream_tokens_per_s"),
                )
            }
            for c, runs in taken.items()
        }
    return report


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(float(np.median(known)), 2) if known else None
