"""Saved-run tests run on SQLite (the default database) and on a real PostgreSQL server.

When any collected test asks for the ``postgres`` database, a throw-away PostgreSQL cluster is
initdb'd in a temporary directory and started on a free port (as the ``postgres`` user when the
suite runs as root: the server refuses to run as root), then added to ``DATABASES`` as the
``postgres`` alias before pytest-django creates the test databases. The ``db_alias`` fixture runs
a test once per backend, routing every query of the test (views included) to that backend.
A missing PostgreSQL is a failure, not a skip: the test command installs Debian's package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections

from tests.playground.runs.routers import PinnedRouter
from tests.servers import free_port

PG_ALIAS = "postgres"
BACKENDS = ("default", PG_ALIAS)


def _pg_bin() -> Path:
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if not versions:
        pytest.exit("PostgreSQL is not installed (apt-get install -y postgresql; scripts/test does it)", returncode=3)
    return versions[-1].parent


def _ensure_sqlite_directory() -> None:
    """The SQLite test database lives in the state directory, which a fresh clone lacks."""
    default = settings.DATABASES["default"]
    if default["ENGINE"].endswith("sqlite3"):
        name = str((default.get("TEST") or {}).get("NAME") or "")
        if name and not name.startswith(":memory:") and "mode=memory" not in name:
            Path(name).parent.mkdir(parents=True, exist_ok=True)


class PostgresCluster:
    """A throw-away cluster: trust authentication, listening on 127.0.0.1 only."""

    def __init__(self) -> None:
        self.bin = _pg_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="playground-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self.as_user, *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")

    def start(self) -> None:
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-sync"
        )
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.dir / "server.log"),
            "-w",
            "-o",
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.dir} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            "start",
        )

    def stop(self) -> None:
        try:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def settings(self) -> dict:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "playground",
            "USER": "postgres",
            "PASSWORD": "",
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "TEST": {"NAME": "test_playground"},
        }


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Starts PostgreSQL only when a selected test uses it, before any database is set up."""
    _ensure_sqlite_directory()
    wanted = any(
        PG_ALIAS in (marker.kwargs.get("databases") or ()) for item in items for marker in item.iter_markers("django_db")
    )
    if not wanted or PG_ALIAS in settings.DATABASES:
        return
    cluster = PostgresCluster()
    started = time.monotonic()
    try:
        cluster.start()
    except Exception:
        cluster.stop()
        raise
    config.add_cleanup(cluster.stop)
    settings.DATABASES[PG_ALIAS] = cluster.settings()
    connections.__dict__.pop("settings", None)  # re-read DATABASES on next use
    config._playground_pg_seconds = time.monotonic() - started  # type: ignore[attr-defined]


@pytest.fixture(params=BACKENDS, ids=["sqlite", "postgresql"])
def db_alias(request: pytest.FixtureRequest, settings) -> str:
    """The backend this test runs on; everything the test does (views too) goes there."""
    PinnedRouter.alias = request.param
    settings.DATABASE_ROUTERS = ["tests.playground.runs.routers.PinnedRouter"]
    assert connections[request.param].vendor == ("postgresql" if request.param == PG_ALIAS else "sqlite")
    yield request.param
    PinnedRouter.alias = "default"
