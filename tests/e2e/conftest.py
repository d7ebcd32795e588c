"""End-to-end fixtures: a real daphne server in a subprocess and Debian's Chromium.

The server runs the dev settings with a throw-away state directory, the real built model and the
embedded inference worker, exactly as `daphne playground.asgi:application` serves it. A missing
model is a failure, not a skip: the test command builds it first.
"""

from __future__ import annotations

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
from playwright.sync_api import Page

from inference.model_dir import MANIFEST_FILE, default_model_dir
from tests.e2e.playground_page import PlaygroundPage

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",  # root in a container: the sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_TIMEOUT_S = 60


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen
    log_path: Path

    def log_tail(self, lines: int = 80) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


@pytest.fixture(scope="session")
def daphne_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A real daphne serving playground.asgi on a free port; yields its base URL's holder."""
    model_dir = default_model_dir()
    if not (model_dir / MANIFEST_FILE).is_file():
        pytest.fail(f"no built model in {model_dir}: run `python -m inference.modelbuild` (the test command does)")

    state = tmp_path_factory.mktemp("playground-state")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "playground.settings.dev", "PLAYGROUND_STATE_DIR": str(state)}
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if migrate.returncode != 0:
        pytest.fail(f"manage.py migrate failed:\n{migrate.stdout}\n{migrate.stderr}")

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
    server = LiveServer(f"http://127.0.0.1:{port}", process, log_path)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while _status(server.url + "/") != 200:
            if process.poll() is not None:
                pytest.fail(f"daphne exited with {process.returncode}:\n{server.log_tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"daphne did not answer / within {SERVER_START_TIMEOUT_S} s:\n{server.log_tail()}")
            time.sleep(0.2)
        static = _status(server.url + "/static/playground/js/main.js")
        if static != 200:
            pytest.fail(f"the ASGI app does not serve /static/ (GET /static/playground/js/main.js → {static})")
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failing end-to-end test's report carries the tail of the server's log."""
    report = yield
    if report.failed and "daphne_server" in getattr(item, "fixturenames", ()):
        server = item.funcargs.get("daphne_server") if hasattr(item, "funcargs") else None
        if server is not None:
            report.sections.append(("daphne log (tail)", server.log_tail()))
    return report


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    """pytest-playwright launches Debian's Chromium: Playwright's own download cannot work here."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    return {**browser_context_args, "viewport": {"width": 1280, "height": 800}}


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """test-artifacts/ at the repository root (git-ignored): screenshots of the main states."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def playground(page: Page, daphne_server: LiveServer, artifacts: Path) -> Iterator[PlaygroundPage]:
    """The playground page, open and connected; fails the test on any JavaScript error."""
    view = PlaygroundPage(page, daphne_server.url, artifacts).open()
    yield view
    assert view.errors == [], f"JavaScript errors on the page: {view.errors}"
