"""Servers the tests start as real processes on free local ports: daphne serving the playground
(its state directory migrated first), and the small steps every such process needs (a free port,
waiting until it listens, stopping it)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60
LOG_TAIL_CHARS = 3000


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free local ports: every probe stays bound until all are chosen (two probes
    one after the other may be handed the same port, e.g. a Redis and a daphne on one port)."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def read_log(log: Path) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log)"


def wait_until(
    ready: Callable[[], bool], what: str, process: subprocess.Popen, log: Path, seconds: float = START_TIMEOUT_S
) -> None:
    """Returns once ``ready()``; fails the test, with the tail of ``log``, if ``process`` exits
    first or ``seconds`` pass (``what`` names what was awaited)."""
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            pytest.fail(f"{process.args} exited with {process.returncode}:\n{read_log(log)[-LOG_TAIL_CHARS:]}")
        if ready():
            return
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {seconds} s:\n{read_log(log)[-LOG_TAIL_CHARS:]}")
        time.sleep(0.2)


def wait_for_port(port: int, process: subprocess.Popen, log: Path, seconds: float = START_TIMEOUT_S) -> None:
    """Returns once something listens on ``port``; fails the test if ``process`` exits first."""

    def listens() -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    wait_until(listens, f"nothing listened on {port}", process, log, seconds)


def wait_for_log(text: str, process: subprocess.Popen, log: Path, seconds: float = START_TIMEOUT_S) -> None:
    """Returns once ``text`` is in ``log``; fails the test if ``process`` exits first."""
    wait_until(lambda: text in read_log(log), f"{text!r} did not appear", process, log, seconds)


def http_status(url: str) -> int | None:
    """The status ``url`` answers with, or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def stop(process: subprocess.Popen) -> None:
    """Terminates ``process``, killing it if it has not exited within ten seconds."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def playground_env(state: Path, **extra_env: str) -> dict[str, str]:
    """The environment of a playground process on the dev settings with its own state directory."""
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "playground.settings.dev", "PLAYGROUND_STATE_DIR": str(state), **extra_env}


def migrate(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        pytest.fail(f"manage.py migrate failed:\n{done.stdout}\n{done.stderr}")


@dataclass
class Daphne:
    """A running daphne (or ``playground.server``) on ``port``, logging to ``log_path``."""

    port: int
    process: subprocess.Popen
    env: dict[str, str]
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def origin(self) -> str:
        return self.url

    @property
    def websocket_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/generate/"

    def manage(self, *args: str) -> str:
        """Runs ``manage.py`` with this server's settings and state; its output."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def log_tail(self, lines: int = 80) -> str:
        return "\n".join(read_log(self.log_path).splitlines()[-lines:])


def start_daphne(state: Path, *, module: str = "daphne", server_args: Sequence[str] = (), **extra_env: str) -> Daphne:
    """Migrates ``state``'s database, then serves ``playground.asgi:application`` with ``python -m
    module`` on a free port; returns once ``/health`` answers (the app is loaded)."""
    env = playground_env(state, **extra_env)
    migrate(env)
    port = free_port()
    log_path = state / "daphne.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", module, "-b", "127.0.0.1", "-p", str(port), *server_args, "playground.asgi:application"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = Daphne(port, process, env, log_path)
    try:
        wait_until(lambda: http_status(server.url + "/health") is not None, f"{module} did not answer /health", process, log_path)
    except BaseException:
        stop(process)
        raise
    return server


@contextlib.contextmanager
def running_daphne(state: Path, **options) -> Iterator[Daphne]:
    """``start_daphne``, stopped when the block ends."""
    server = start_daphne(state, **options)
    try:
        yield server
    finally:
        stop(server.process)
