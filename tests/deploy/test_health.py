"""/health, /ready and /metrics in the test settings (embedded worker, in-memory channel layer),
and what readiness says when a part is missing."""

from __future__ import annotations

import socket

import pytest
from channels_redis.core import RedisChannelLayer
from django.test import AsyncClient

from playground.edge import health

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def client() -> AsyncClient:
    return AsyncClient(headers={"host": "localhost"})


async def test_liveness(client):
    health._health_cache.clear()
    response = await client.get("/health")
    body = response.json()
    assert response.status_code == 200 and body["status"] == "ok"
    assert body["model"] == {"built": True, "name": "SmolLM2-135M-Instruct"}
    assert body["workers"]["reachable"] is True and body["workers"]["host"] == socket.gethostname()
    assert body["queue"] == {"waiting": 0}
    assert response["Cache-Control"] == "no-store"


async def test_ready_when_database_channel_layer_and_a_worker_answer(client):
    response = await client.get("/ready")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ready"
    checks = body["checks"]
    assert checks["database"]["ok"] and checks["database"]["vendor"] == "sqlite"
    assert checks["channel_layer"] == checks["channel_layer"] | {"ok": True, "backend": "InMemoryChannelLayer"}
    answered = checks["workers"]["answered_by"]
    assert answered["host"] == socket.gethostname() and answered["model"] == "SmolLM2-135M-Instruct"
    assert all(check["ms"] >= 0 for check in checks.values())


async def test_not_ready_when_the_worker_has_no_model(client, tmp_path, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_MODEL_DIR", str(tmp_path / "nothing-here"))
    response = await client.get("/ready")
    body = response.json()
    assert response.status_code == 503 and body["status"] == "not_ready"
    assert body["checks"]["database"]["ok"] and body["checks"]["channel_layer"]["ok"]
    assert not body["checks"]["workers"]["ok"]
    assert "has no model" in body["checks"]["workers"]["error"] and "nothing-here" in body["checks"]["workers"]["error"]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_not_ready_when_redis_is_unreachable(client, monkeypatch):
    # the checks' layer only: the session's in-memory layer and its embedded worker stay as they are
    unreachable = RedisChannelLayer(hosts=[f"redis://127.0.0.1:{_closed_port()}/0"])
    monkeypatch.setattr(health, "get_channel_layer", lambda: unreachable)
    response = await client.get("/ready")
    body = response.json()
    assert response.status_code == 503
    assert body["checks"]["database"]["ok"]
    for name in ("channel_layer", "workers"):
        assert not body["checks"][name]["ok"]
        assert "connect" in body["checks"][name]["error"].lower(), body
        assert body["checks"][name]["ms"] < 3500  # a refused connection is reported, not waited on


async def test_probes_answer_get_and_head_only(client):
    assert (await client.head("/health")).status_code == 200
    assert (await client.post("/health")).status_code == 404


async def test_metrics_page_is_prometheus_text(client):
    await client.get("/")  # counted as an HTTP response; probes are not
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    text = response.content.decode()
    for name in (
        "playground_requests_total",
        "playground_requests_in_flight",
        "playground_requests_waiting",
        "playground_streams_running",
        "playground_tokens_total",
        "playground_time_to_first_token_seconds_bucket",
        "playground_decode_tokens_per_second_bucket",
        "playground_errors_total",
    ):
        assert f"# TYPE {name.removesuffix('_total').removesuffix('_bucket')}" in text, name
    assert 'playground_http_responses_total{method="GET",status="200"}' in text
    assert 'status="200"' in text and "/health" not in text
