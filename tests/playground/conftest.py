"""Fixtures for the playground's tests."""

from __future__ import annotations

import pytest

from playground.worker.serving import resources


@pytest.fixture
def decode_loop() -> None:
    """The process's decode loop is made once, with the settings of that moment. Made here, before
    a test narrows ``MAX_BATCH`` with ``override_settings``, it has the suite's rows in whatever
    order the tests run (the narrowed tests limit the worker's intake, which reads the settings
    each time)."""
    resources().scheduler()


@pytest.fixture(autouse=True)
def fresh_client_limits():
    """Every test starts as a new client: the per-address token bucket is per process, and the
    requests of the tests before one must not spend its burst (a 15-page tokenize was refused as
    rate limited on a fast clone)."""
    from playground.edge.client_limits import client_limits

    client_limits.cache_clear()
    yield
    client_limits.cache_clear()
