"""Chat runs made through ``/v1/chat/completions`` (the official ``openai`` client, a real daphne,
the real model) are saved with their whole conversation: the export carries every message and
``continue_final_message``, it imports and exports back the same, the websocket replays it to the
same tokens, and "Open in playground" writes its turns into the page's address."""

from __future__ import annotations

import html
import json
import re
import urllib.request
from urllib.parse import parse_qs, urlsplit

import openai
import pytest
from websockets.sync.client import connect

from playground.runs.address import turns_value
from tests.playground.scale_out import request_events

pytestmark = pytest.mark.real_model

MESSAGES = [
    {"role": "system", "content": "You answer in one short sentence."},
    {"role": "user", "content": "Capital of France?"},
    {"role": "assistant", "content": "Paris."},
    {"role": "user", "content": "And of Italy?"},
    {"role": "assistant", "content": "The capital of Italy is"},
]


@pytest.fixture(scope="module")
def client(api_server) -> openai.OpenAI:
    return openai.OpenAI(base_url=api_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def fetch(url: str, body: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"} if body else {})
    with urllib.request.urlopen(request) as answer:
        return answer.status, answer.read()


def test_an_api_chat_run_keeps_its_messages(client, api_server, model_id):
    answer = client.chat.completions.create(
        model=model_id,
        messages=MESSAGES,
        max_tokens=6,
        temperature=0.9,
        seed=77,
        extra_body={"continue_final_message": True},
    )
    run_id = answer.model_extra["playground"]["run_id"]
    status, body = fetch(f"{api_server.url}/r/{run_id}.json")
    exported = json.loads(body)
    request = exported["run"]["request"]
    assert status == 200 and exported["version"] == 3
    assert request["messages"] == MESSAGES and request["continue_final_message"] is True
    assert (request["prompt"], request["system"], request["mode"]) == ("And of Italy?", None, "chat")
    assert exported["run"]["result"]["text"] == answer.choices[0].message.content

    # The websocket replays the saved request (as the run page's Replay sends it) to the same tokens.
    frame = {"mode": "chat", "messages": request["messages"], "continue_final_message": True}
    frame |= {"params": request["params"], "top_n": request["top_n"], "use_cache": request["use_cache"]}
    with connect(api_server.url.replace("http://", "ws://") + "/ws/generate/", origin=api_server.url) as ws:
        events = request_events(ws, {"type": "generate", "request_id": "replay", **frame})
    replayed = [e["id"] for e in events if e["type"] == "token"]
    assert replayed == [t["id"] for t in exported["run"]["tokens"]]

    # Export → import → export gives the same file back.
    status, body = fetch(f"{api_server.url}/api/runs/import", json.dumps(exported).encode())
    copy_id = json.loads(body)["runs"][0]["id"]
    again = json.loads(fetch(f"{api_server.url}/r/{copy_id}.json")[1])
    assert status == 201
    assert again == exported | {"run": exported["run"] | {"id": copy_id, "source": "imported", "imported_from": run_id}}

    # "Open in playground" carries the turns and the answer's start.
    page = fetch(f"{api_server.url}/r/{run_id}")[1].decode()
    link = html.unescape(re.search(r'href="([^"]*)" data-action="open-in-playground"', page).group(1))
    query = {key: values[0] for key, values in parse_qs(urlsplit(link).query, keep_blank_values=True).items()}
    assert turns_value(query["turns"]) == MESSAGES[1:3]
    assert (query["system"], query["prompt"], query["assistant_prefix"]) == (
        MESSAGES[0]["content"],
        "And of Italy?",
        MESSAGES[4]["content"],
    )


def test_a_one_message_api_chat_is_kept_as_its_message(client, api_server, model_id):
    answer = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": "Hello!"}], max_tokens=2, temperature=0
    )
    request = json.loads(fetch(f"{api_server.url}/r/{answer.model_extra['playground']['run_id']}.json")[1])["run"]["request"]
    assert request["messages"] == [{"role": "user", "content": "Hello!"}] and request["prompt"] == "Hello!"
