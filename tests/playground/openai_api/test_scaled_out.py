"""The API over Redis with a `runworker` process: served the same way as the websocket, and a
worker killed mid-stream ends the HTTP stream with an error instead of a hang."""

from __future__ import annotations

import openai
import pytest
from websockets.sync.client import connect

from tests.playground.scale_out import ScaleOut, request_events

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = ScaleOut(tmp_path_factory.mktemp("openai-scale-out"), PLAYGROUND_WORKER_ACK_TIMEOUT="4")
    try:
        worker, _ = stack.start_worker()
        stack.start_web()
        yield stack, worker
    finally:
        stack.close()


def test_websockets_of_the_same_web_process_are_served_after_an_api_call(tmp_path):
    """The HTTP API's reply channels share the web process's one channel-layer inbox with the
    websocket consumers': a different prefix once left every websocket request after an API call
    with log-probabilities unheard until
    it failed with no_worker (the default acknowledgement timeout, as deployed)."""
    stack = ScaleOut(tmp_path)
    try:
        stack.start_worker()
        stack.start_web()
        _api_then_websocket(stack)
    finally:
        stack.close()


def _api_then_websocket(stack: ScaleOut) -> None:
    client = openai.OpenAI(base_url=stack.origin + "/v1", api_key="unused", max_retries=0, timeout=120)
    model = client.models.list().data[0].id
    answer = client.completions.create(model=model, prompt="The capital of France is", max_tokens=5, temperature=0, logprobs=2)
    assert answer.usage.completion_tokens == 5
    with connect(stack.url, origin=stack.origin) as ws:
        frame = {"type": "generate", "request_id": "after-api", "prompt": "Hello", "params": {"max_tokens": 2}}
        events = request_events(ws, frame, timeout=60)
    assert events[-1]["type"] == "done", events[-1]


def test_a_killed_worker_ends_the_stream_with_an_error(stack):
    stack, worker = stack
    client = openai.OpenAI(base_url=stack.origin + "/v1", api_key="unused", max_retries=0, timeout=120)
    model = client.models.list().data[0].id
    whole = client.completions.create(model=model, prompt="The capital of France is", max_tokens=3, temperature=0)
    assert whole.usage.completion_tokens == 3 and whole.model_extra["playground"]["run_id"]

    stream = client.completions.create(
        model=model, prompt="Once upon a time", max_tokens=4000, temperature=0, stream=True, extra_body={"ignore_eos": True}
    )
    chunks = iter(stream)
    run_id = next(chunks).model_extra["playground"]["run_id"]
    for _ in range(5):
        next(chunks)
    worker.kill()  # SIGKILL mid-stream
    with pytest.raises(openai.APIError) as caught:
        for _ in chunks:
            pass
    assert "stopped answering" in caught.value.message
    saved = stack.get_json(f"/r/{run_id}.json")["run"]
    assert saved["status"] == "failed" and saved["result"]["error"]["code"] == "worker_lost"
