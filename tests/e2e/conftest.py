"""End-to-end fixtures: a real daphne server in a subprocess and Debian's Chromium.

The server runs the dev settings with a throw-away state directory, the real built model and the
embedded inference worker, exactly as `daphne playground.asgi:application` serves it. A missing
model is a failure, not a skip: the test command builds it first.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from inference.model_dir import MANIFEST_FILE, default_model_dir
from tests.e2e.playground_page import PlaygroundPage
from tests.servers import REPO, Daphne, http_status, running_daphne

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


@pytest.fixture(scope="session")
def daphne_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daphne]:
    """A real daphne serving playground.asgi on a free port, with its static files."""
    model_dir = default_model_dir()
    if not (model_dir / MANIFEST_FILE).is_file():
        pytest.fail(f"no built model in {model_dir}: run `python -m inference.modelbuild` (the test command does)")
    with running_daphne(tmp_path_factory.mktemp("playground-state")) as server:
        static = http_status(server.url + "/static/playground/js/main.js")
        if static != 200:
            pytest.fail(f"the ASGI app does not serve /static/ (GET /static/playground/js/main.js → {static})")
        yield server


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
def playground(page: Page, daphne_server: Daphne, artifacts: Path) -> Iterator[PlaygroundPage]:
    """The playground page, open and connected; fails the test on any JavaScript error."""
    view = PlaygroundPage(page, daphne_server.url, artifacts).open()
    yield view
    assert view.errors == [], f"JavaScript errors on the page: {view.errors}"
