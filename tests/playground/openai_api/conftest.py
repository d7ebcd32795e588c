"""Real daphne servers for the OpenAI-compatible API, driven by clients nobody here wrote.

``api_server``: the dev settings with the real built model and the embedded worker, as
``daphne playground.asgi:application`` serves it. ``locked_server``: no worker at all, API keys
required, one allowed CORS origin and a client rate of one request then a long wait: where 401,
429, 503 and CORS are checked without loading a model.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from inference.model_dir import MANIFEST_FILE, default_model_dir

REPO = Path(__file__).resolve().parents[3]
START_TIMEOUT_S = 60
ALLOWED_ORIGIN = "http://course.example:8080"


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    env: dict[str, str]
    log_path: Path

    @property
    def origin(self) -> str:
        return self.url

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def start_server(state: Path, **extra_env: str) -> Server:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "playground.settings.dev",
        "PLAYGROUND_STATE_DIR": str(state),
        **extra_env,
    }
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert migrate.returncode == 0, migrate.stderr
    port = _free_port()
    log_path = state / "daphne.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "playground.asgi:application"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = Server(f"http://127.0.0.1:{port}", process, env, log_path)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _answers(server.url + "/health"):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_server(server)
            pytest.fail(f"daphne did not start:\n{server.log_tail()}")
        time.sleep(0.2)
    return server


def stop_server(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@contextlib.contextmanager
def running_server(state: Path, **extra_env: str) -> Iterator[Server]:
    """``start_server``, stopped when the block ends."""
    server = start_server(state, **extra_env)
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture(scope="session")
def model_id() -> str:
    return json.loads((default_model_dir() / MANIFEST_FILE).read_text())["model_name"]


@pytest.fixture(scope="session")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not (default_model_dir() / MANIFEST_FILE).is_file():
        pytest.fail(f"no built model in {default_model_dir()}: run `python -m inference.modelbuild`")
    with running_server(tmp_path_factory.mktemp("openai-api")) as server:
        yield server


@pytest.fixture(scope="session")
def locked_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(
        tmp_path_factory.mktemp("openai-api-locked"),
        PLAYGROUND_EMBEDDED_WORKER="0",
        PLAYGROUND_WORKER_ACK_TIMEOUT="1",
        PLAYGROUND_API_KEYS_REQUIRED="1",
        PLAYGROUND_API_CORS_ORIGINS=ALLOWED_ORIGIN,
        PLAYGROUND_CLIENT_BURST="1",
        PLAYGROUND_CLIENT_REQUESTS_PER_SECOND="0.01",
    ) as server:
        yield server
