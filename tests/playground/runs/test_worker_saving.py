"""Runs saved through the real path: the websocket consumer, the embedded worker, the real model.
A run cancelled mid-stream, and one whose browser went away mid-stream, are saved as partial."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async as sync_to_async  # closes its connections after

from playground.runs.models import Run
from playground.runs.schema import run_to_dict
from playground.runs.token_rows import ENVELOPE_KEYS
from tests.client_frames import generate
from tests.communicator import TIMEOUT, connect

pytestmark = [
    pytest.mark.real_model,
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
]

GENERATE = generate(None, "Once upon a time", top_n=4, params={"temperature": 0.8, "top_p": 0.95, "max_tokens": 200, "seed": 7})


async def until(communicator, request_id, stop):
    events = []
    while True:
        event = await communicator.receive_json_from(timeout=TIMEOUT)
        if (
            event.get("request_id") == request_id and event["type"] != "loading"
        ):  # (a model's load notice, sent before a run that waited for its model (the first run of it in this process): not these tests' subject (tests/playground/worker/test_model_load.py))
            events.append(event)
            if stop(event, events):
                return events


async def test_cancel_mid_stream_saves_a_partial_run(db_alias):
    communicator = await connect()
    await communicator.send_json_to(GENERATE | {"request_id": "c1"})
    events = await until(communicator, "c1", lambda e, es: sum(x["type"] == "token" for x in es) == 3)
    await communicator.send_json_to({"type": "cancel", "request_id": "c1"})
    events += await until(communicator, "c1", lambda e, es: e["type"] in ("done", "error"))
    await communicator.disconnect()

    done = events[-1]
    assert done["type"] == "done" and done["reason"] == "cancelled", done
    assert done["run_id"] and done["delete_token"] and "save_error" not in done
    tokens = [e for e in events if e["type"] == "token"]
    assert 3 <= len(tokens) < 200
    run = await sync_to_async(Run.objects.get)(pk=done["run_id"])
    assert run.status == "cancelled" and run.reason == "cancelled"
    assert run.prompt == "Once upon a time" and run.seed == 7 and run.params["top_p"] == 0.95
    started = events[0]
    assert run.prompt_tokens == [[t["id"], t["text"]] for t in started["prompt_tokens"]]
    assert run.onnxruntime_version == started["model"]["onnxruntime_version"]
    assert run_to_dict(run)["tokens"] == [{k: v for k, v in t.items() if k not in ENVELOPE_KEYS} for t in tokens]
    assert run.text == done["text"]


async def test_browser_closing_mid_stream_still_saves_the_run(db_alias):
    communicator = await connect()
    await communicator.send_json_to(GENERATE | {"request_id": "gone", "prompt": "The history of the city"})
    events = await until(communicator, "gone", lambda e, es: sum(x["type"] == "token" for x in es) == 2)
    await communicator.disconnect()  # cancels the request; its done has nobody to go to
    received = sum(e["type"] == "token" for e in events)

    query = Run.objects.filter(prompt="The history of the city")
    for _ in range(100):
        run = await sync_to_async(query.first)()
        if run is not None:
            break
        await asyncio.sleep(0.1)
    assert run is not None, "the run of a closed connection was not saved"
    assert run.status == "cancelled"
    assert received <= len(run.tokens) < 200


async def test_a_branch_is_saved_with_its_parent_and_branch_point(db_alias):
    communicator = await connect()
    await communicator.send_json_to(GENERATE | {"request_id": "p", "params": {**GENERATE["params"], "max_tokens": 4}})
    parent = (await until(communicator, "p", lambda e, es: e["type"] in ("done", "error")))[-1]
    await communicator.send_json_to(
        GENERATE
        | {
            "request_id": "b",
            "params": {**GENERATE["params"], "max_tokens": 2},
            "prefix_tokens": [11],
            "parent_run": parent["run_id"],
            "branch_index": 0,
        }
    )
    branch = (await until(communicator, "b", lambda e, es: e["type"] in ("done", "error")))[-1]
    await communicator.disconnect()
    run = await sync_to_async(Run.objects.get)(pk=branch["run_id"])
    assert run.parent_id == parent["run_id"] and run.branch_index == 0 and run.prefix_tokens == [11]
