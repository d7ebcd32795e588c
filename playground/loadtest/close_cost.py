"""What a closed connection costs the server (``manage.py loadtest --close-cost TRIES``; issue 32).

Each try opens one websocket, sends ``requests`` long generations (~200-token prompts,
``max_tokens`` 2000, ``ignore_eos``, temperature 1; the last two draft by prompt lookup), and closes
it at the first token, while the others are still prefilling, decoding or drafting. The server
process's CPU time (user + system, of ``--server-pid`` on this machine: every thread, the decode
loop's and ONNX Runtime's pool included) is read every ``SAMPLE_S`` from just before the close
until the server holds nothing (``/api/load``) and has been quiet for ``QUIET_S``. A try reports:

- ``first_half_s``: CPU-seconds used in the first 0.5 s after the close;
- ``total``: CPU-seconds used from the close until it was quiet;
- ``stopped_after_s``: when the compute stopped, the end of the last sample that used a quarter of
  a core or more (an idle server uses next to nothing; ONNX Runtime's threads spin briefly after a
  call). On a machine whose cores other work holds, the decode loop gets less than a core, so
  its compute stretches over more wall-clock time: compare tries made under the same load;
- ``profile``: CPU-seconds used in each ``PROFILE_S`` after the close, for the first 2 s.

The figures are printed per try and as median and max over the tries; nothing is asserted here
(tests/playground/edge/test_closed_connection.py checks what holds whatever the timing).
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit, urlunsplit

from websockets.sync.client import connect

SAMPLE_S = 0.05  # seconds between CPU readings
BUSY_SHARE = 0.25  # of one core over a sample: the compute is still running (an idle server: next to none)
QUIET_S = 1.0  # quiet after the worker holds nothing: the try is over
PROFILE_S = 0.25  # the width of each ``profile`` slice
HORIZON_S = 30.0  # a try never waits longer than this after the close
PROMPT = " ".join(["The quick brown fox jumps over the lazy dog near the river bank."] * 16)  # ~200 tokens


@dataclass(frozen=True)
class CloseCost:
    """One try's figures (see the module's docstring); ``started``: requests that had started at the close."""

    first_half_s: float
    total: float
    stopped_after_s: float
    started: int
    profile: tuple[float, ...]


def frames(requests: int, marker: str) -> list[dict]:
    """The generate frames of one try: the last two (of three or more) draft by prompt lookup."""
    sent = []
    for i in range(requests):
        params: dict = {"max_tokens": 2000, "ignore_eos": True, "temperature": 1}
        if requests >= 3 and i >= requests - 2:
            params["speculative"] = {"draft": "prompt_lookup"}
        sent.append({"type": "generate", "request_id": f"c{i}", "prompt": f"{marker}-{i}: {PROMPT}", "params": params})
    return sent


def http_origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(("https" if parts.scheme == "wss" else "http", parts.netloc, "", "", ""))


def holds_nothing(http: str) -> bool:
    with urllib.request.urlopen(http + "/api/load", timeout=30) as response:
        total = json.loads(response.read())["total"]
    return total["running"] == 0 and total["waiting"] == 0


def one_try(url: str, origin: str, server_pid: int, requests: int, marker: str) -> CloseCost:
    import psutil  # a tool's dependency, not the server's

    process = psutil.Process(server_pid)

    def cpu() -> float:
        times = process.cpu_times()
        return times.user + times.system

    http = http_origin(url)
    started = 0
    with connect(url, origin=origin, compression=None, open_timeout=60) as socket:
        for frame in frames(requests, marker):
            socket.send(json.dumps(frame))
        while True:
            event = json.loads(socket.recv(timeout=300))
            if event["type"] == "error":
                raise RuntimeError(f"the server refused a request: {event}")
            started += event["type"] == "started"
            if event["type"] == "token":
                break
        closed_at, at_close = time.monotonic(), cpu()
    readings = [(0.0, 0.0)]  # (seconds after the close, CPU-seconds since)
    quiet_since: float | None = None
    while readings[-1][0] < HORIZON_S:
        time.sleep(SAMPLE_S)
        readings.append((time.monotonic() - closed_at, cpu() - at_close))
        busy = readings[-1][1] - readings[-2][1] >= BUSY_SHARE * (readings[-1][0] - readings[-2][0])
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = readings[-1][0]
        elif readings[-1][0] - quiet_since >= QUIET_S:  # asked only then: each ask costs the server a little
            if holds_nothing(http):
                break
            quiet_since = None
    return CloseCost(
        first_half_s=max(used for at, used in readings if at <= 0.5 + SAMPLE_S / 2),
        total=readings[-1][1],
        stopped_after_s=_stopped_after(readings),
        started=started,
        profile=_profile(readings),
    )


def _stopped_after(readings: list[tuple[float, float]]) -> float:
    """The end of the last sample that used ``BUSY_SHARE`` of a core or more (0: none did)."""
    last = 0.0
    for (began, before), (ended, after) in zip(readings, readings[1:]):
        if after - before >= BUSY_SHARE * (ended - began):
            last = ended
    return last


def _profile(readings: list[tuple[float, float]]) -> tuple[float, ...]:
    """CPU-seconds used in each ``PROFILE_S`` slice of the first 2 s (the reading nearest each edge)."""
    edges = [i * PROFILE_S for i in range(int(2.0 / PROFILE_S) + 1)]
    used = [min(readings, key=lambda reading: abs(reading[0] - edge))[1] for edge in edges]
    return tuple(round(after - before, 3) for before, after in zip(used, used[1:]))


def run(
    url: str, origin: str, server_pid: int, tries: int, requests: int = 8, progress: Callable[[str], None] | None = None
) -> list[CloseCost]:
    """``tries`` closes, each once the server holds nothing and has been quiet."""
    costs = []
    for number in range(tries):
        while not holds_nothing(http_origin(url)):
            time.sleep(0.2)
        time.sleep(QUIET_S)
        cost = one_try(url, origin, server_pid, requests, f"close-{int(time.time())}-{number}")
        costs.append(cost)
        if progress is not None:
            progress(f"try {number + 1}/{tries}: {format_cost(cost)}")
    return costs


def format_cost(cost: CloseCost) -> str:
    return (
        f"{cost.first_half_s:.2f} CPU-s in the first 0.5 s, {cost.total:.2f} CPU-s in all, "
        f"compute stopped after {cost.stopped_after_s:.2f} s ({cost.started} started); "
        f"per {PROFILE_S} s: {' '.join(f'{used:.2f}' for used in cost.profile)}"
    )


def summary(costs: list[CloseCost]) -> dict:
    """Median and max of each figure over the tries, and every try's."""
    figures = {}
    for name in ("first_half_s", "total", "stopped_after_s"):
        values = [getattr(cost, name) for cost in costs]
        figures[name] = {"median": round(statistics.median(values), 3), "max": round(max(values), 3)}
    return {"tries": len(costs), **figures, "each": [asdict(cost) for cost in costs]}


def format_summary(costs: list[CloseCost]) -> str:
    figures = summary(costs)
    lines = [f"a socket closed at the first token, {len(costs)} tries (median / max):"]
    for name, label in (
        ("first_half_s", "CPU-s in the first 0.5 s"),
        ("total", "CPU-s in all"),
        ("stopped_after_s", "compute stopped after (s)"),
    ):
        lines.append(f"  {label}: {figures[name]['median']:.2f} / {figures[name]['max']:.2f}")
    return "\n".join(lines)
