"""The scale-out shape as real processes for the tests: a throw-away Redis, `manage.py runworker
inference` workers and a daphne without an embedded worker, all on free local ports."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.servers import REPO, free_ports, playground_env, stop, wait_for_log, wait_for_port


class ScaleOut:
    """Starts the processes of one scale-out deployment and stops them all on ``close``."""

    def __init__(self, state: Path, **env: str) -> None:
        redis_server = shutil.which("redis-server")
        if redis_server is None:
            pytest.fail("redis-server is not installed (the test command installs Debian's redis-server)")
        self.state = state
        self.redis_port, self.web_port = free_ports(2)
        self.env = playground_env(
            state,
            PLAYGROUND_REDIS_URL=f"redis://127.0.0.1:{self.redis_port}/0",
            PLAYGROUND_EMBEDDED_WORKER="0",
            **env,
        )
        self.processes: list[subprocess.Popen] = []
        self.workers = 0
        self.redis_argv = [
            redis_server,
            "--port",
            str(self.redis_port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        self.redis, redis_log = self._start("redis", self.redis_argv)
        wait_for_port(self.redis_port, self.redis, redis_log)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=self.env, check=True, timeout=120
        )

    def _start(self, name: str, argv: list[str]) -> tuple[subprocess.Popen, Path]:
        log = self.state / f"{name}.log"
        process = subprocess.Popen(argv, cwd=REPO, env=self.env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process, log

    def restart_redis(self) -> None:
        """Stops Redis and starts a fresh one on the same port: every message it held is gone (it
        keeps nothing on disk, as in the compose stack)."""
        stop(self.redis)
        self.redis, redis_log = self._start("redis-restarted", self.redis_argv)
        wait_for_port(self.redis_port, self.redis, redis_log)

    def start_worker(self) -> tuple[subprocess.Popen, Path]:
        """A `runworker inference` process, returned once it listens on the channel."""
        self.workers += 1
        worker, log = self._start(f"worker-{self.workers}", [sys.executable, "manage.py", "runworker", "inference"])
        wait_for_log("Running worker for channels", worker, log)
        return worker, log

    def start_web(self) -> tuple[subprocess.Popen, Path]:
        web, log = self._start(
            "web", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.web_port), "playground.asgi:application"]
        )
        wait_for_port(self.web_port, web, log)
        return web, log

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.web_port}/ws/generate/"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def get_json(self, path: str) -> Any:
        return json.loads(self.get(path))

    def get(self, path: str) -> str:
        with urllib.request.urlopen(f"{self.origin}{path}", timeout=30) as response:
            return response.read().decode()

    def close(self) -> None:
        for process in reversed(self.processes):
            stop(process)


def request_events(ws, frame: dict, end_types=("done", "error"), timeout: float = 120) -> list[dict]:
    """Sends a frame and returns its request's events up to its last one."""
    ws.send(json.dumps(frame))
    return events_until(ws, frame["request_id"], end_types, timeout)


def events_until(ws, request_id: str, end_types=("done", "error"), timeout: float = 120) -> list[dict]:
    events = []
    while True:
        event = json.loads(ws.recv(timeout=timeout))
        if event.get("request_id") == request_id:
            events.append(event)
            if event["type"] in end_types:
                return events
