"""The soak (playground/loadtest/soak.py, ``manage.py loadtest --soak``): a short one against a real daphne
serving the tiny model runs every kind of request, reads the server's memory, files and database
size over time, and gives its verdict; and the verdict itself on figures made by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from playground.loadtest import soak
from tests.playground.loadtest.test_burst import start_tiny_server
from tests.servers import REPO, Daphne, stop


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daphne]:
    daphne = start_tiny_server(tmp_path_factory.mktemp("soak"))
    yield daphne
    stop(daphne.process)


def test_a_short_soak_runs_every_kind_of_request_and_watches_the_server(server: Daphne) -> None:
    database = Path(server.env["PLAYGROUND_STATE_DIR"]) / "playground.sqlite3"
    argv = ["manage.py", "loadtest", "--url", server.url, "--soak", "0.3", "--tokens", "8", "--json"]
    argv += ["--server-pid", str(server.process.pid), "--server-log", str(server.log_path), "--database", str(database)]
    done = subprocess.run([sys.executable, *argv], cwd=REPO, env=server.env, capture_output=True, text=True, timeout=600)
    figures = json.loads(done.stdout)
    assert figures["broken"] == [], figures["broken"]
    assert set(figures["requests"]) == {name for name, _ in soak.SCENARIOS}, figures["requests"]
    assert figures["runs_saved"] > 0 and figures["runs_lost"] == [] and figures["tracebacks"] == 0
    samples = figures["samples"]
    assert len(samples) >= 3 and all(s["rss_bytes"] and s["open_files"] and s["database_bytes"] for s in samples)
    assert figures["memory_growth"] is not None
    verdict = figures["verdict"]
    assert verdict["no_broken_request"] and verdict["no_lost_run"] and verdict["no_traceback"]
    assert done.returncode == (0 if verdict["pass"] else 1), done.stderr
    assert "rss" in done.stderr  # a line per sample while it runs


def test_the_soak_reads_the_servers_own_metrics_without_its_pid(server: Daphne) -> None:
    config = soak.make_soak_config(server.url, 0.01, clients=1, tokens=4)
    rss, files = soak._resources(config)
    assert rss and rss > 10 * 2**20 and files and files > 0


def sample(at_s: float, rss: int) -> soak.Sample:
    return soak.Sample(at_s, rss, 20, 1000, 5, {})


def test_the_verdict_fails_memory_that_grows_after_the_first_tenth_and_a_traceback(tmp_path: Path) -> None:
    config = soak.make_soak_config("ws://127.0.0.1:1", 10)  # ten minutes: the first tenth is one minute
    flat = soak.Soak(config, samples=[sample(0, 100), sample(30, 900), sample(60, 1000), sample(600, 1040)], tracebacks=0)
    assert flat.memory_growth() == pytest.approx(0.04) and flat.verdict()["pass"]
    grown = soak.Soak(config, samples=[sample(60, 1000), sample(600, 1060)], tracebacks=0)
    assert not grown.verdict()["memory_flat"] and not grown.verdict()["pass"]
    log = tmp_path / "server.log"
    log.write_text("old Traceback\n")
    start = log.stat().st_size
    log.write_text("old Traceback\nTraceback (most recent call last):\n")
    assert soak._tracebacks(log, start) == 1 and soak._tracebacks(None, 0) is None
    unknown = soak.Soak(config, samples=flat.samples, tracebacks=None)
    assert not unknown.verdict()["no_traceback"]  # no log: not a pass
    broken = soak.Soak(config, samples=flat.samples, tracebacks=0, outcomes=[soak.Outcome("greedy", 5.0, "lost a token")])
    assert not broken.verdict()["pass"]


def test_a_soak_of_no_time_or_an_unknown_scenario_is_refused() -> None:
    with pytest.raises(soak.ConfigError, match="--soak"):
        soak.make_soak_config("ws://127.0.0.1:1", 0)
    with pytest.raises(soak.ConfigError, match="--only names no scenario"):
        soak.make_soak_config("ws://127.0.0.1:1", 1, only=("greedy", "sing"))
    assert soak.make_soak_config("ws://127.0.0.1:1", 1, only=("greedy",)).only == ("greedy",)


def test_a_client_refused_by_the_servers_limits_waits_before_its_next_request() -> None:
    assert soak.pause_after(soak.Outcome("api", 12.0, None, "busy")) == soak.LIMIT_BACKOFF_S > 0
    assert soak.pause_after(soak.Outcome("greedy", 9.0, None, "rate_limited")) == soak.LIMIT_BACKOFF_S
    assert soak.pause_after(soak.Outcome("greedy", 900.0)) == 0.0
    assert soak.pause_after(soak.Outcome("cancel", 300.0, None, "cancelled")) == 0.0
