"""A streamed request that waits in line for a worker's room gets its stream early, kept alive with
SSE comment lines, and then its run as usual; the official client reads through the comments."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.servers import Daphne, running_daphne

KEEPALIVE_S = 0.5
COMMENT = ": waiting for a worker"
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def one_row_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daphne]:
    """A worker with room for one generation and no backlog: a second one waits in line."""
    with running_daphne(
        tmp_path_factory.mktemp("openai-api-one-row"),
        PLAYGROUND_MAX_BATCH="1",
        PLAYGROUND_WORKER_BACKLOG="0",
        PLAYGROUND_API_SSE_KEEPALIVE_SECONDS=str(KEEPALIVE_S),
    ) as server:
        yield server


def long_stream(server: Daphne, model_id: str) -> httpx.Response:
    """A streamed generation that holds the one row (its first token has come) until it is closed."""
    body = {"model": model_id, "prompt": "A long story", "max_tokens": 8000, "ignore_eos": True, "stream": True}
    client = httpx.Client(timeout=60)
    response = client.send(client.build_request("POST", server.url + "/v1/completions", json=body), stream=True)
    assert response.status_code == 200
    lines = response.iter_lines()
    while not (line := next(lines)).startswith("data: "):
        pass
    assert '"text"' in line, line  # a token, not an error
    response.extensions["kept"] = (client, lines)  # (closing either would close the stream)
    return response


def test_a_waiting_stream_is_kept_alive_with_comments_then_streams_its_run(one_row_server, model_id):
    holder = long_stream(one_row_server, model_id)
    body = {"model": model_id, "prompt": PROMPT, "max_tokens": 3, "temperature": 0, "stream": True}
    with httpx.stream("POST", one_row_server.url + "/v1/completions", json=body, timeout=60) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        began = time.monotonic()
        comments = 0
        while comments < 3:  # the run cannot start: the row is held
            line = next(lines)
            assert line in (COMMENT, ""), line
            comments += line == COMMENT
        assert time.monotonic() - began >= KEEPALIVE_S  # one comment with the headers, then one per interval
        holder.close()  # the holder's client goes: its run is cancelled and the row frees
        rest = [line for line in lines if line]
    data = [line for line in rest if line != COMMENT]
    assert all(line.startswith("data: ") for line in data), data
    assert data[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in data[:-1]]
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None, None, None, "length"]  # three tokens, then the end
    assert chunks[0]["choices"][0]["text"] == " Paris"


def test_the_official_client_reads_a_waiting_stream(one_row_server, model_id):
    holder = long_stream(one_row_server, model_id)
    threading.Timer(3 * KEEPALIVE_S, holder.close).start()
    client = openai.OpenAI(base_url=one_row_server.url + "/v1", api_key="unused", max_retries=0)
    stream = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=3, temperature=0, stream=True)
    text = "".join(chunk.choices[0].text for chunk in stream if chunk.choices)
    alone = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=3, temperature=0)
    assert text == alone.choices[0].text and text.startswith(" Paris")
