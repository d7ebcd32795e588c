"""A real Redis server for the channel layer's tests, one per test."""

from __future__ import annotations

import subprocess

import pytest

from tests.servers import free_port, wait_for_port


@pytest.fixture
def redis_url(tmp_path):
    port = free_port()
    log = tmp_path / "redis.log"
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, server, log)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)
