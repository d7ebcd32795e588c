"""The API on the wire: the SSE format line by line, HTTP statuses, API keys, CORS."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import httpx
import openai
import pytest

from tests.playground.openai_api.conftest import ALLOWED_ORIGIN

PROMPT = "The capital of France is"


def test_sse_wire_format_line_by_line(api_server, model_id):
    body = {"model": model_id, "prompt": PROMPT, "max_tokens": 4, "temperature": 0, "stream": True, "logprobs": 1}
    body["stream_options"] = {"include_usage": True}
    with httpx.stream("POST", api_server.url + "/v1/completions", json=body, timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        raw = response.read().decode("utf-8")
    assert raw.endswith("data: [DONE]\n\n")
    events = raw.split("\n\n")
    assert events[-1] == ""
    payloads = []
    for event in events[:-1]:
        assert "\n" not in event, "one line per event"
        assert event.startswith("data: ")
        payloads.append(event.removeprefix("data: "))
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    ids = {c["id"] for c in chunks}
    assert len(ids) == 1 and next(iter(ids)).startswith("cmpl-")
    assert all(c["object"] == "text_completion" and c["model"] == model_id for c in chunks)
    token_chunks = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"] is None]
    assert len(token_chunks) == 4
    assert all(len(c["choices"][0]["logprobs"]["tokens"]) == 1 for c in token_chunks)
    assert token_chunks[0]["playground"]["run_id"]  # the saved run, from the first chunk on
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 4


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/v1/nothing/here", 404, "unknown_url"),
        ("POST", "/v1/embeddings", 404, "unknown_url"),
        ("GET", "/v1/completions", 405, "method_not_allowed"),
    ],
)
def test_routes_under_v1_answer_in_openais_shape(api_server, method, path, status, code):
    response = httpx.request(method, api_server.url + path, timeout=30)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}


def test_an_oversized_body_is_413_and_bad_json_400(api_server, model_id):
    huge = {"model": model_id, "prompt": "x" * (1024 * 1024 + 10)}
    response = httpx.post(api_server.url + "/v1/completions", json=huge, timeout=30)
    assert response.status_code == 413 and response.json()["error"]["code"] == "request_too_large"
    response = httpx.post(api_server.url + "/v1/completions", content=b"{nope", timeout=30)
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_json"
    response = httpx.post(api_server.url + "/v1/completions", content=b'{"model": "x", "prompt": NaN}', timeout=30)
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("sent", "named"),
    [
        ({"content": b"{}", "headers": {"Content-Type": "text/plain"}}, "'text/plain'"),
        ({"data": {"model": "m", "prompt": "p"}}, "'application/x-www-form-urlencoded'"),
        ({"files": {"body": ("body.json", b"{}", "application/json")}}, "multipart/form-data"),
    ],
)
def test_a_body_that_is_not_sent_as_json_is_refused_naming_its_type(api_server, model_id, sent, named):
    if "content" in sent:
        sent = sent | {"content": json.dumps({"model": model_id, "prompt": PROMPT, "max_tokens": 1}).encode()}
    response = httpx.post(api_server.url + "/v1/completions", timeout=30, **sent)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "unsupported_content_type" and error["param"] is None and error["type"] == "invalid_request_error"
    assert named in error["message"]
    body = {"model": model_id, "prompt": PROMPT, "max_tokens": 1}
    with_charset = {"Content-Type": "application/json; charset=utf-8"}
    response = httpx.post(api_server.url + "/v1/completions", content=json.dumps(body), headers=with_charset, timeout=60)
    assert response.status_code == 200, response.text


def test_a_browser_cookie_and_no_csrf_token_do_not_matter(api_server, model_id):
    body = {"model": model_id, "prompt": PROMPT, "max_tokens": 1}
    response = httpx.post(api_server.url + "/v1/completions", json=body, cookies={"csrftoken": "x" * 32}, timeout=60)
    assert response.status_code == 200, response.text


def test_no_worker_is_503_and_a_full_rate_429_with_retry_after(locked_server, model_id):
    key = locked_server.manage("apikey", "create", "test").strip()
    client = openai.OpenAI(base_url=locked_server.url + "/v1", api_key=key, max_retries=0, timeout=30)
    with pytest.raises(openai.InternalServerError) as caught:
        client.completions.create(model=model_id, prompt=PROMPT)
    assert caught.value.status_code == 503 and caught.value.body["code"] == "no_worker"
    with pytest.raises(openai.RateLimitError) as limited:
        client.completions.create(model=model_id, prompt=PROMPT)
    assert int(limited.value.response.headers["Retry-After"]) >= 1
    assert limited.value.body["code"] == "rate_limited"


def test_api_keys_when_required(locked_server, model_id):
    no_key = httpx.get(locked_server.url + "/v1/models", timeout=30)
    assert no_key.status_code == 401 and no_key.json()["error"]["code"] == "missing_api_key"
    key = locked_server.manage("apikey", "create", "keys test").strip()
    assert key.startswith("pg-")
    client = openai.OpenAI(base_url=locked_server.url + "/v1", api_key=key, max_retries=0, timeout=30)
    assert client.models.list().data[0].id == model_id
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=locked_server.url + "/v1", api_key=key + "x", max_retries=0).models.list()
    listing = locked_server.manage("apikey", "list")
    assert key[:11] in listing and key not in listing
    locked_server.manage("apikey", "revoke", key[:11])
    with pytest.raises(openai.AuthenticationError) as caught:
        client.models.list()
    assert caught.value.body["code"] == "invalid_api_key"


def test_cors_only_for_configured_origins(locked_server):
    url = locked_server.url + "/v1/chat/completions"
    asked = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}
    allowed = httpx.options(url, headers={"Origin": ALLOWED_ORIGIN, **asked}, timeout=30)
    assert allowed.status_code == 204
    assert allowed.headers["Access-Control-Allow-Origin"] == ALLOWED_ORIGIN
    assert "POST" in allowed.headers["Access-Control-Allow-Methods"]
    assert "Authorization" in allowed.headers["Access-Control-Allow-Headers"]
    other = httpx.options(url, headers={"Origin": "http://evil.example", **asked}, timeout=30)
    assert "Access-Control-Allow-Origin" not in other.headers
    refused = httpx.get(locked_server.url + "/v1/models", headers={"Origin": ALLOWED_ORIGIN}, timeout=30)
    assert refused.status_code == 401 and refused.headers["Access-Control-Allow-Origin"] == ALLOWED_ORIGIN


def test_health_stays_200_and_says_no_worker_answers(locked_server):
    response = httpx.get(locked_server.url + "/health", timeout=30)
    body = response.json()
    assert response.status_code == 200 and body["status"] == "ok"
    assert body["model"]["built"] is True and body["workers"]["reachable"] is False
    assert body["queue"]["waiting"] >= 0


def test_api_requests_are_counted_in_the_metrics(api_server, model_id):
    def generated() -> float:
        text = httpx.get(api_server.url + "/metrics", timeout=30).text
        line = next((ln for ln in text.splitlines() if ln.startswith('playground_requests_total{kind="generate"}')), None)
        return 0.0 if line is None else float(line.split()[-1])

    before = generated()
    body = {"model": model_id, "prompt": PROMPT, "max_tokens": 1}
    assert httpx.post(api_server.url + "/v1/completions", json=body, timeout=60).status_code == 200
    assert generated() == before + 1

    def in_flight() -> float:
        text = httpx.get(api_server.url + "/metrics", timeout=30).text
        return float(next(ln for ln in text.splitlines() if ln.startswith("playground_requests_in_flight")).split()[-1])

    deadline = time.monotonic() + 30  # a request another test gave up on may still be ending
    while in_flight() != 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert in_flight() == 0  # the answered request left the gauge


def test_a_client_that_gives_up_on_a_whole_answer_cancels_its_generation(api_server, model_id):
    """Not streamed: the view itself is cancelled on http.disconnect, and the worker stops."""
    database = Path(api_server.env["PLAYGROUND_STATE_DIR"]) / "playground.sqlite3"
    prompt = "A very long story about a lighthouse keeper"
    # far longer than the client's 3 s patience on any machine (about all the context window allows)
    body = {"model": model_id, "prompt": prompt, "max_tokens": 8000, "ignore_eos": True, "temperature": 0}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(api_server.url + "/v1/completions", json=body, timeout=httpx.Timeout(30, read=3))
    deadline = time.monotonic() + 30
    while True:
        with sqlite3.connect(database) as db:
            row = db.execute("SELECT status, reason, usage FROM playground_run WHERE prompt = ?", (prompt,)).fetchone()
        if row is not None:
            break
        assert time.monotonic() < deadline, "the abandoned run was never saved: it went on generating"
        time.sleep(0.3)
    status, reason, usage = row
    assert (status, reason) == ("cancelled", "cancelled")
    assert json.loads(usage)["completion_tokens"] < 8000
