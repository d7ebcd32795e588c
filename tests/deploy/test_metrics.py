"""The web side's Prometheus metrics, driven by real websocket traffic to the embedded worker."""

from __future__ import annotations

import json

import pytest
from channels.testing import WebsocketCommunicator
from prometheus_client import REGISTRY

from tests.client_frames import generate
from tests.communicator import TIMEOUT, connect

pytestmark = [pytest.mark.real_model, pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

GAUGES = ("playground_requests_in_flight", "playground_requests_waiting", "playground_streams_running")


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def snapshot() -> dict[str, float]:
    return {
        "generate": value("playground_requests_total", kind="generate"),
        "tokenize": value("playground_requests_total", kind="tokenize"),
        "tokens": value("playground_tokens_total"),
        "ttft": value("playground_time_to_first_token_seconds_count"),
        "rate": value("playground_decode_tokens_per_second_count"),
        "ok": value("playground_request_duration_seconds_count", kind="generate", outcome="ok"),
        "closed": value("playground_request_duration_seconds_count", kind="generate", outcome="closed"),
        "duplicate": value("playground_errors_total", code="duplicate_request"),
        **{gauge: value(gauge) for gauge in GAUGES},
    }


def grew(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {key: after[key] - before[key] for key in before if after[key] != before[key]}


def counting(request_id: str, max_tokens: int) -> dict:
    """A generate frame that makes exactly ``max_tokens`` tokens."""
    return generate(request_id, "Count to ten:", params={"temperature": 0, "max_tokens": max_tokens, "min_tokens": max_tokens})


async def until(communicator: WebsocketCommunicator, request_id: str, event_type: str) -> list[dict]:
    events = []
    while True:
        event = await communicator.receive_json_from(timeout=TIMEOUT)
        if event.get("request_id") == request_id:
            events.append(event)
            if event["type"] in (event_type, "error"):
                return events


async def test_a_generation_is_counted_from_submission_to_done():
    communicator = await connect()
    before = snapshot()
    await communicator.send_json_to(counting("m1", 4))
    events = await until(communicator, "m1", "done")
    assert events[-1]["type"] == "done"
    tokens = sum(1 for e in events if e["type"] == "token")
    assert grew(before, snapshot()) == {"generate": 1, "tokens": tokens, "ttft": 1, "rate": 1, "ok": 1}
    await communicator.disconnect()


async def test_gauges_follow_a_stream_and_a_duplicate_id_does_not_end_it():
    communicator = await connect()
    before = snapshot()
    await communicator.send_json_to(counting("m2", 2000))  # still running at the duplicate on any machine
    await until(communicator, "m2", "started")
    running = grew(before, snapshot())
    assert running["playground_requests_in_flight"] == 1 and running["playground_streams_running"] == 1
    assert "playground_requests_waiting" not in running  # it left the queue when it started
    await communicator.send_json_to(counting("m2", 2000))  # the same id while it runs
    error = await until(communicator, "m2", "error")
    assert error[-1]["error"]["code"] == "duplicate_request"
    still = grew(before, snapshot())
    assert still["duplicate"] == 1 and still["playground_requests_in_flight"] == 1
    await communicator.send_json_to({"type": "cancel", "request_id": "m2"})
    await until(communicator, "m2", "done")
    finished = grew(before, snapshot())
    assert not any(gauge in finished for gauge in GAUGES), finished
    await communicator.disconnect()


async def test_a_closed_socket_ends_its_requests_in_the_gauges():
    communicator = await connect()
    before = snapshot()
    await communicator.send_json_to(counting("m3", 2000))
    await communicator.send_json_to(counting("m4", 2000))  # beside m3 in the batch, or still waiting for it
    await until(communicator, "m3", "started")
    during = grew(before, snapshot())
    running, waiting = during.get("playground_streams_running", 0), during.get("playground_requests_waiting", 0)
    assert during["playground_requests_in_flight"] == 2
    assert running >= 1 and running + waiting == 2, during
    await communicator.disconnect()
    after = grew(before, snapshot())
    assert not any(gauge in after for gauge in GAUGES), after
    assert after["closed"] == 2


async def test_errors_are_counted_by_code():
    communicator = await connect()
    before = value("playground_errors_total", code="unknown_request")
    await communicator.send_to(text_data=json.dumps({"type": "cancel", "request_id": "never-sent"}))
    event = await communicator.receive_json_from(timeout=TIMEOUT)
    assert event["error"]["code"] == "unknown_request"
    assert value("playground_errors_total", code="unknown_request") == before + 1
    await communicator.disconnect()
