"""``watch`` on a ``generate`` frame: checked by field at the edge and by the worker against the
vocabulary, carried across the channel layer, and followed in every token event and the saved run."""

from __future__ import annotations

import json

import pytest

from playground.edge.frames import MAX_WATCH, ProtocolError, parse_client_frame
from playground.runs.models import Run
from playground.runs.request_fields import record_fields
from playground.wire import channel_messages
from tests.client_frames import generate
from tests.communicator import connect

from .test_consumer import events_until_end


def refused(frame: dict) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        parse_client_frame(json.dumps(frame))
    return caught.value


@pytest.mark.parametrize(
    "watch, param",
    [
        ("12", "watch"),
        (list(range(MAX_WATCH + 1)), "watch"),
        ([3, -1], "watch.1"),
        ([3, 4.0], "watch.1"),
        ([True], "watch.0"),
        ([5, 5], "watch"),
    ],
)
def test_a_bad_watch_is_refused_by_field(watch, param):
    error = refused(generate(watch=watch))
    assert (error.code, error.param) == ("invalid_value", param)


def test_watch_crosses_the_channel_layer_and_is_recorded():
    job = parse_client_frame(json.dumps(generate(watch=[9, 2])))
    assert job.request.watch == (9, 2)
    assert channel_messages.job_from_dict(json.loads(json.dumps(channel_messages.job_to_dict(job)))) == job
    assert record_fields(job)["watch"] == [9, 2]
    assert parse_client_frame(json.dumps(generate())).request.watch == ()


@pytest.mark.real_model
@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_every_token_event_follows_the_watched_tokens_and_the_run_keeps_them():
    communicator = await connect()
    frame = generate("w", "The capital of France is", params={"temperature": 0.8, "top_p": 0.5, "max_tokens": 6, "seed": 5})
    await communicator.send_json_to(frame | {"watch": [38034, 7042], "top_n": 3})  # " Lyon" (far below), " Paris"
    events = await events_until_end(communicator, "w")
    tokens, done = events[1:-1], events[-1]
    assert done["type"] == "done", done
    for event in tokens:
        assert [w["id"] for w in event["watched"]] == [38034, 7042]
        for w in event["watched"]:
            assert w["token"] and 0 <= w["prob"] <= 1 and (w["rank"] is None) == (w["removed_by"] is not None)
            listed = [a for a in event["alternatives"] if a["id"] == w["id"]]
            for a in listed:
                assert (w["raw_prob"], w["prob"], w["removed_by"]) == (a["raw_prob"], a["prob"], a["removed_by"])
    lyon = tokens[0]["watched"][0]
    assert lyon["token"] == " Lyon" and lyon["raw_rank"] > 3 and lyon["removed_by"] == "top_p"
    run = await Run.objects.aget(pk=done["run_id"])
    assert run.watch == [38034, 7042]
    await communicator.send_json_to(generate("bad", "x", watch=[5, 60000]))
    event = (await events_until_end(communicator, "bad"))[-1]
    assert event["type"] == "error" and event["error"]["param"] == "watch.1", event
    await communicator.disconnect()
