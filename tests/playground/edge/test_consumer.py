"""The /ws/generate/ consumer through Channels' WebsocketCommunicator, with the real model behind
the embedded worker: full streams, cancel, every class of bad input, and the origin check."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import get_channel_layer
from django.conf import settings

from playground.wire.channel_messages import INFERENCE_CHANNEL, PING
from tests.client_frames import generate
from tests.communicator import HOST, TIMEOUT, connect, unconnected

# Runs are saved as they end (see playground.runs), so the worker thread needs the database.
pytestmark = [pytest.mark.real_model, pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def events_until_end(communicator, request_id, final_type="done"):
    """Every event of one request up to and including its last one (``final_type``, or an error)."""
    events = []
    while True:
        event = await communicator.receive_json_from(timeout=TIMEOUT)
        if (
            event.get("request_id") != request_id or event["type"] == "loading"
        ):  # (a model's load notice, sent before a run that waited for its model (the first run of it in this process): not these tests' subject (tests/playground/worker/test_model_load.py))
            continue
        events.append(event)
        if event["type"] in (final_type, "error"):
            return events


async def expect_error(communicator, frame, code, param):
    if isinstance(frame, bytes):
        await communicator.send_to(bytes_data=frame)
    else:
        await communicator.send_to(text_data=frame if isinstance(frame, str) else json.dumps(frame))
    event = await communicator.receive_json_from(timeout=TIMEOUT)
    assert event["type"] == "error", event
    assert event["error"]["code"] == code, event
    assert event["error"]["param"] == param, event
    assert event["error"]["message"]
    return event


async def test_full_stream_greedy():
    communicator = await connect()
    await communicator.send_json_to(
        generate("g1", "The capital of France is", params={"temperature": 0, "max_tokens": 5}, top_n=3)
    )
    events = await events_until_end(communicator, "g1")
    started, tokens, done = events[0], events[1:-1], events[-1]
    assert started["type"] == "started"
    assert isinstance(started["seed"], int)
    assert "".join(t["text"] for t in started["prompt_tokens"]) == "<|endoftext|>The capital of France is"
    assert started["params"]["temperature"] == 0 and started["params"]["max_tokens"] == 5
    assert started["model"]["execution_provider"] == "CPUExecutionProvider"
    assert started["model"]["kernels"].startswith(("our kernels (", "ONNX Runtime MatMulNBits"))
    assert len(started["model"]["manifest_sha256"]) == 64
    assert [t["index"] for t in tokens] == list(range(5))
    first = tokens[0]
    assert first["text"] == " Paris" and first["prob"] == 1.0
    assert len(first["alternatives"]) == 3
    raws = [a["raw_prob"] for a in first["alternatives"]]
    assert raws == sorted(raws, reverse=True) and raws[0] == first["raw_prob"]
    assert done["type"] == "done" and done["reason"] == "max_tokens"
    assert done["text"] == "".join(t["text"] for t in tokens) + done["tail"]
    assert done["usage"] == {"prompt_tokens": len(started["prompt_tokens"]), "completion_tokens": 5, "total_completion_tokens": 5}
    assert done["timing"]["time_to_first_token_ms"] > 0
    await communicator.disconnect()


async def test_cancel_keeps_what_was_generated():
    communicator = await connect()
    await communicator.send_json_to(generate("c1", "Once upon a time", params={"temperature": 0.8, "seed": 3, "max_tokens": 500}))
    tokens = []
    while len(tokens) < 3:
        event = await communicator.receive_json_from(timeout=TIMEOUT)
        if event["type"] == "token":
            tokens.append(event)
    await communicator.send_json_to({"type": "cancel", "request_id": "c1"})
    rest = await events_until_end(communicator, "c1")
    done = rest[-1]
    assert done["type"] == "done" and done["reason"] == "cancelled"
    assert 3 <= done["usage"]["completion_tokens"] < 500
    tokens += [e for e in rest if e["type"] == "token"]
    assert done["text"] == "".join(t["text"] for t in tokens) + done["tail"]
    # the connection still works afterwards
    await communicator.send_json_to(generate("c2", "Hi", params={"max_tokens": 1}))
    assert (await events_until_end(communicator, "c2"))[-1]["type"] == "done"
    await communicator.disconnect()


@pytest.mark.parametrize(
    "frame, code, param",
    [
        ("{not json", "invalid_json", None),
        ("[1, 2]", "invalid_json", None),
        ('{"type": "generate", "request_id": "n", "prompt": "x", "params": {"temperature": NaN}}', "invalid_json", None),
        ({"type": "dance"}, "unknown_type", "type"),
        ({"request_id": "x"}, "unknown_type", "type"),
        (generate("e1", None), "missing_field", "prompt"),
        (generate(None), "missing_field", "request_id"),
        (generate("bad id!", "hi"), "invalid_value", "request_id"),
        (generate("e2", ""), "invalid_value", "prompt"),
        (generate("e3", 42), "invalid_value", "prompt"),
        (generate("e4", "hi", mode="poem"), "invalid_value", "mode"),
        (generate("e5", "hi", top_n=21), "invalid_value", "top_n"),
        (generate("e6", "hi", top_n=True), "invalid_value", "top_n"),
        (
            generate("e7", "hi", params={"temperature": 3.5}),
            "invalid_value",
            "params.temperature",
        ),
        (generate("e8", "hi", params={"top_p": 0}), "invalid_value", "params.top_p"),
        (
            generate("e9", "hi", params={"max_tokens": 0}),
            "invalid_value",
            "params.max_tokens",
        ),
        (
            generate("e10", "hi", params={"temprature": 1}),
            "unknown_param",
            "params.temprature",
        ),
        (generate("e11", "hi", params=[]), "invalid_value", "params"),
        (generate("e12", "hi", colour="red"), "unknown_param", "colour"),
        ({"type": "cancel", "request_id": "nothing-running"}, "unknown_request", "request_id"),
    ],
)
async def test_bad_input_gets_a_named_error_and_the_connection_survives(frame, code, param):
    communicator = await connect()
    event = await expect_error(communicator, frame, code, param)
    if isinstance(frame, dict) and isinstance(frame.get("request_id"), str) and frame["request_id"] != "bad id!":
        assert event["request_id"] == frame["request_id"]
    await communicator.send_json_to(generate("after", "Hi", params={"max_tokens": 1}))
    assert (await events_until_end(communicator, "after"))[-1]["type"] == "done"
    await communicator.disconnect()


async def test_binary_frame_is_refused():
    communicator = await connect()
    await expect_error(communicator, b"\x00\x01", "binary_frame", None)
    await communicator.disconnect()


async def test_out_of_range_message_names_the_range():
    communicator = await connect()
    event = await expect_error(
        communicator,
        generate("r", "hi", params={"temperature": 9}),
        "invalid_value",
        "params.temperature",
    )
    assert "0" in event["error"]["message"] and "2" in event["error"]["message"]
    await communicator.disconnect()


async def test_prompt_longer_than_the_context_window():
    communicator = await connect()
    # 9,000 characters but at least 9,000 tokens (each emoji is one or more): over the 8,192 window
    await communicator.send_json_to(generate("long", "🎉" * 9000))
    events = await events_until_end(communicator, "long")
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "prompt_too_long"
    assert events[-1]["error"]["param"] == "prompt"
    await communicator.disconnect()


async def test_max_tokens_beyond_what_the_window_leaves_names_the_room_left():
    communicator = await connect()
    await communicator.send_json_to(generate("room", "hello " * 1000, params={"max_tokens": 8000}))
    error = (await events_until_end(communicator, "room"))[-1]["error"]
    assert error["code"] == "prompt_too_long" and error["param"] == "params.max_tokens"
    # <|endoftext|>, "hello", 999 × " hello", the trailing " ": 1002 tokens; 8192 - 1002 = 7190
    assert "between 1 and 7190" in error["message"]
    await communicator.disconnect()


@pytest.mark.parametrize(
    "origin",
    [
        b"http://evil.example",
        b"http://localhost:9999",
        b"https://localhost",
        b"ws://localhost",
        b"null",
        b"",
        b"http://localhost.evil.example",
        b"http://localhost/path",
    ],
)
async def test_foreign_origin_is_refused_by_scheme_host_and_port(origin):
    connected, _ = await unconnected(((b"origin", origin), HOST)).connect(timeout=TIMEOUT)
    assert not connected


async def test_the_servers_own_origin_and_listed_origins_are_allowed(settings):
    for origin, host in [(b"http://localhost:8000", b"localhost:8000"), (b"http://127.0.0.1", b"127.0.0.1:80")]:
        communicator = await connect(((b"origin", origin), (b"host", host)))
        await communicator.disconnect()
    settings.WEBSOCKET_ALLOWED_ORIGINS = ["https://playground.example:8443"]
    communicator = await connect(((b"origin", b"https://playground.example:8443"), HOST))
    await communicator.disconnect()
    refused = unconnected(((b"origin", b"http://playground.example:8443"), HOST))
    assert not (await refused.connect(timeout=TIMEOUT))[0]


async def test_disconnect_mid_stream_stops_generation():
    communicator = await connect()
    await communicator.send_json_to(generate("d1", "Once upon a time", params={"max_tokens": 8000, "ignore_eos": True}))
    while (await communicator.receive_json_from(timeout=TIMEOUT))["type"] != "token":
        pass
    await communicator.disconnect()
    # The worker is free again: were it still decoding 8000 tokens (minutes), this would time out.
    other = await connect()
    await other.send_json_to(generate("d2", "Hi", params={"max_tokens": 1}))
    events = await events_until_end(other, "d2")
    assert events[-1]["type"] == "done"
    await other.disconnect()


async def test_n_samples_stream_with_sample_index():
    communicator = await connect()
    await communicator.send_json_to(
        generate("n3", "My favourite colour is", params={"n": 3, "seed": 11, "max_tokens": 6, "temperature": 1.0})
    )
    events = await events_until_end(communicator, "n3")
    tokens = [e for e in events if e["type"] == "token"]
    done = events[-1]
    assert {t["sample"] for t in tokens} == {0, 1, 2}
    assert [s["sample"] for s in done["samples"]] == [0, 1, 2]
    for s in done["samples"]:
        pieces = "".join(t["text"] for t in tokens if t["sample"] == s["sample"])
        assert pieces + s["tail"] == s["text"]
    await communicator.disconnect()


async def test_beam_search_streams_the_tree():
    communicator = await connect()
    await communicator.send_json_to(generate("b2", "The capital of France is", params={"num_beams": 2, "max_tokens": 4}))
    events = await events_until_end(communicator, "b2")
    steps = [e for e in events if e["type"] == "beam_step"]
    done = events[-1]
    assert steps and all(len(s["beams"]) <= 2 for s in steps)
    assert len(done["beams"]) == 2 and done["text"] == done["samples"][0]["text"] != ""
    paths = [[]]  # rebuild every live beam's path from the streamed steps
    for step in steps:
        paths = [paths[b["parent"]] + [b["id"]] for b in step["beams"]]
    for beam in done["beams"]:
        if beam["reason"] == "max_tokens":
            assert beam["token_ids"] in paths
    assert done["beams"][0]["score"] >= done["beams"][1]["score"]
    await communicator.disconnect()


async def test_sampling_and_beams_together_is_refused():
    communicator = await connect()
    await expect_error(
        communicator,
        generate("x", "hi", params={"n": 2, "num_beams": 2}),
        "invalid_value",
        "params.num_beams",
    )
    await communicator.disconnect()


EVERY_STAGE = {
    "logit_bias": {"7042": -5},
    "repetition_penalty": 1.1,
    "frequency_penalty": 0.2,
    "presence_penalty": 0.2,
    "penalty_window": 64,
    "dry_multiplier": 0.8,
    "no_repeat_ngram_size": 3,
    "top_n_sigma": 3.0,
    "temperature": 0.9,
    "dynatemp_range": 0.3,
    "top_k": 40,
    "top_p": 0.95,
    "min_p": 0.02,
    "typical_p": 0.98,
    "epsilon_cutoff": 0.0003,
    "eta_cutoff": 0.0009,
    "xtc_probability": 0.3,
    "xtc_threshold": 0.1,
    "mirostat": 2,
    "seed": 5,
    "max_tokens": 6,
}


async def test_every_stage_on_streams_a_trace_of_each_stage():
    communicator = await connect()
    await communicator.send_json_to(generate("all", "The capital of France is", params=EVERY_STAGE))
    events = await events_until_end(communicator, "all")
    started, tokens = events[0], [e for e in events if e["type"] == "token"]
    assert events[-1]["type"] == "done", events[-1]
    assert started["params"]["logit_bias"] == {"7042": -5.0} or started["params"]["logit_bias"] == {"7042": -5}
    names = [s["name"] for s in tokens[0]["stages"]]
    assert names[:3] == ["logit_bias", "repetition_penalty", "frequency_penalty"]
    assert "top_k" in names and "mirostat" in names
    kept = [s["kept"] for s in tokens[0]["stages"]]
    assert kept[names.index("top_k")] <= 40
    assert all(0 <= t["prob"] <= 1 and t["draw"] is not None for t in tokens)
    for alternative in tokens[0]["alternatives"]:
        assert (alternative["prob"] == 0) == (alternative["removed_by"] is not None)
    await communicator.disconnect()


@pytest.mark.parametrize(
    "params, param",
    [
        ({"sampler_order": ["temperature", "warp_drive"]}, "params.sampler_order"),
        ({"dry_multiplier": -1}, "params.dry_multiplier"),
        ({"mirostat": 1}, "params.mirostat"),
        ({"logit_bias": {"12": 500}}, "params.logit_bias.12"),
        ({"logit_bias": {"999999": 1}}, "params.logit_bias.999999"),
        ({"logit_bias": {str(10**30): 1}, "num_beams": 2}, f"params.logit_bias.{10**30}"),  # beam search checks it too
        ({"stop": ["x" * 65]}, "params.stop.0"),
        ({"n": 9}, "params.n"),
        ({"length_penalty": 9}, "params.length_penalty"),
        ({"min_tokens": 10, "max_tokens": 5}, "params.min_tokens"),
    ],
)
async def test_every_parameter_is_validated_by_name(params, param):
    communicator = await connect()
    await communicator.send_json_to(generate("v", "hi", params=params))
    event = (await events_until_end(communicator, "v"))[-1]
    assert event["type"] == "error" and event["error"]["param"] == param, event
    assert event["error"]["code"] == "invalid_value"
    await communicator.disconnect()


async def test_tokenize_gives_exactly_what_generate_feeds():
    communicator = await connect()
    await communicator.send_json_to({"type": "tokenize", "request_id": "t1", "text": "The capital of France is"})
    tokens = (await events_until_end(communicator, "t1", "tokens"))[-1]
    await communicator.send_json_to(generate("g", "The capital of France is", params={"max_tokens": 1}))
    started = (await events_until_end(communicator, "g"))[0]
    assert tokens["tokens"] == started["prompt_tokens"]
    assert tokens["count"] == len(started["prompt_tokens"]) and tokens["context_window"] == 8192
    await communicator.send_json_to({"type": "tokenize", "request_id": "t2", "text": " Paris", "mode": "plain"})
    plain = (await events_until_end(communicator, "t2", "tokens"))[-1]
    assert [t["text"] for t in plain["tokens"]] == [" Paris"]
    await communicator.disconnect()


async def test_inspect_reshapes_the_real_distribution_of_a_position():
    communicator = await connect()
    prompt = "The capital of France is"
    await communicator.send_json_to(generate("g", prompt, params={"temperature": 0, "max_tokens": 2}, top_n=5))
    tokens = [e for e in await events_until_end(communicator, "g") if e["type"] == "token"]
    await communicator.send_json_to(
        {
            "type": "inspect",
            "request_id": "w",
            "prompt": prompt,
            "prefix_tokens": [tokens[0]["id"]],
            "params": {"top_p": 0.5},
            "variants": [{"temperature": t} for t in (0.1, 0.5, 1.0, 1.5, 2.0)],
            "top_n": 5,
        }
    )
    inspection = (await events_until_end(communicator, "w", "inspection"))[-1]
    assert inspection["type"] == "inspection" and inspection["position"] == 1
    traces = inspection["traces"]
    assert [t["params"]["temperature"] for t in traces] == [0.1, 0.5, 1.0, 1.5, 2.0]
    # raw probabilities are the model's own at that position: the same as the generated token's
    raw = {a["id"]: a["raw_prob"] for a in tokens[1]["alternatives"]}
    for trace in traces:
        for a in trace["alternatives"]:
            assert a["raw_prob"] == pytest.approx(raw[a["id"]], rel=1e-4)
    kept = [t["stages"][-1]["kept"] for t in traces]
    assert kept == sorted(kept) and kept[0] < kept[-1]  # hotter → flatter → top_p keeps more
    assert all(abs(sum(x["prob"] for x in t["top_final"]) - 1) < 1e-9 for t in traces if t["stages"][-1]["kept"] <= 5)
    await communicator.disconnect()


@pytest.mark.parametrize(
    "frame, code, param",
    [
        ({"type": "tokenize", "request_id": "t", "text": 5}, "invalid_value", "text"),
        ({"type": "tokenize", "request_id": "t", "text": "x", "mode": "weird"}, "invalid_value", "mode"),
        ({"type": "inspect", "request_id": "i", "prompt": "x", "variants": []}, "invalid_value", "variants"),
        ({"type": "inspect", "request_id": "i", "prompt": "x", "variants": [{"top_k": -1}]}, "invalid_value", "variants.0.top_k"),
        ({"type": "inspect", "request_id": "i", "prompt": "x", "prefix_tokens": [1, "a"]}, "invalid_value", "prefix_tokens.1"),
        (generate("g", "x", prefix_tokens=[-3]), "invalid_value", "prefix_tokens.0"),
    ],
)
async def test_new_request_kinds_validate_by_name(frame, code, param):
    communicator = await connect()
    await expect_error(communicator, frame, code, param)
    await communicator.disconnect()


async def test_prefix_token_outside_the_vocabulary_is_named():
    communicator = await connect()
    await communicator.send_json_to(generate("p", "x", prefix_tokens=[5, 60000]))
    event = (await events_until_end(communicator, "p"))[-1]
    assert event["type"] == "error" and event["error"]["param"] == "prefix_tokens.1"
    await communicator.disconnect()


async def test_answered_requests_free_their_slot():
    """More tokenize/inspect requests than the per-connection limit, one after another, all served."""
    communicator = await connect()
    for i in range(12):
        await communicator.send_json_to({"type": "tokenize", "request_id": f"t{i}", "text": "hello"})
        assert (await events_until_end(communicator, f"t{i}", "tokens"))[-1]["type"] == "tokens"
    # a finished request's id can be used again
    await communicator.send_json_to({"type": "tokenize", "request_id": "t0", "text": "again"})
    assert (await events_until_end(communicator, "t0", "tokens"))[-1]["type"] == "tokens"
    await communicator.disconnect()


async def test_a_ninth_pending_request_is_refused():
    communicator = await connect()
    for i in range(8):
        await communicator.send_json_to(generate(f"q{i}", "Once", params={"max_tokens": 3000, "ignore_eos": True}))
    event = await expect_error(communicator, generate("q8", "x"), "too_many_requests", None)
    assert event["request_id"] == "q8"
    for i in range(8):
        await communicator.send_json_to({"type": "cancel", "request_id": f"q{i}"})
    ended = {}
    while len(ended) < 8:  # every queued request ends, cancelled, before the test lets go of the database
        event = await communicator.receive_json_from(timeout=TIMEOUT)
        if event["type"] in ("done", "error"):
            ended[event["request_id"]] = event
    # Each ends cancelled: one the decode loop had already admitted (8 rows: any of them may have
    # joined the batch before its cancel arrived) as a cancelled run, one still waiting as an error.
    for i in range(8):
        event = ended[f"q{i}"]
        assert (event["type"], event.get("reason")) == ("done", "cancelled") or (
            event["type"] == "error" and event["error"]["code"] == "cancelled"
        ), event
    await communicator.disconnect()


@pytest.mark.parametrize(
    "extra, code, param",
    [
        ({"parent_run": "short", "branch_index": 2}, "invalid_value", "parent_run"),
        ({"parent_run": "a" * 22, "branch_index": -1}, "invalid_value", "branch_index"),
        ({"parent_run": "a" * 22}, "missing_field", "branch_index"),
    ],
)
async def test_branch_labels_are_checked(extra, code, param):
    communicator = await connect()
    await expect_error(communicator, generate("b", "x") | extra, code, param)
    await communicator.disconnect()


@pytest.mark.parametrize(
    "frame",
    [
        '{"type": "generate", "request_id": "h", "prompt": "hi", "params": {"temperature": 1' + "0" * 400 + "}}",
        '{"type": "generate", "request_id": "h", "prompt": "hi", "params": {"seed": 1' + "0" * 5000 + "}}",
        '{"type": "generate", "request_id": "h", "prompt": "hi", "params": {"top_p": 1e400}}',
    ],
)
async def test_numbers_too_large_for_any_field_are_refused_and_the_connection_survives(frame):
    communicator = await connect()
    await expect_error(communicator, frame, "invalid_json", None)
    await communicator.send_json_to(generate("after", "Hi", params={"max_tokens": 1}))
    assert (await events_until_end(communicator, "after"))[-1]["type"] == "done"
    await communicator.disconnect()


async def test_a_huge_logit_bias_id_is_named():
    communicator = await connect()
    await communicator.send_json_to(generate("lb", "hi", params={"logit_bias": {str(10**30): 1}}))
    event = (await events_until_end(communicator, "lb"))[-1]
    assert event["type"] == "error" and event["error"]["param"] == f"params.logit_bias.{10**30}", event
    await communicator.disconnect()


async def test_cancel_after_done_is_an_unknown_request():
    communicator = await connect()
    await communicator.send_json_to(generate("fin", "Hi", params={"max_tokens": 1}))
    assert (await events_until_end(communicator, "fin"))[-1]["type"] == "done"
    await expect_error(communicator, {"type": "cancel", "request_id": "fin"}, "unknown_request", "request_id")
    await communicator.disconnect()


async def test_closing_before_any_worker_took_the_request_still_cancels_it():
    """Disconnect right after sending: the request is dropped or cancelled, never decoded to its end."""
    from channels.db import database_sync_to_async

    from playground.runs.models import Run

    communicator = await connect()
    prompt = "A story that nobody will read:"
    await communicator.send_json_to(generate("early", prompt, params={"max_tokens": 8000, "ignore_eos": True}))
    await communicator.disconnect()
    other = await connect()  # the worker still serves
    await other.send_json_to(generate("next", "Hi", params={"max_tokens": 1}))
    assert (await events_until_end(other, "next"))[-1]["type"] == "done"
    await other.disconnect()
    # "early" ends long before its 8000 tokens (minutes): the worker is soon idle, whatever the timing
    layer = get_channel_layer()
    reply = await layer.new_channel("test.")
    for _ in range(120):
        await layer.send(INFERENCE_CHANNEL, {"type": PING, "reply_channel": reply})
        if (await asyncio.wait_for(layer.receive(reply), TIMEOUT))["load"]["running"] == 0:
            break
        await asyncio.sleep(0.5)
    else:
        raise AssertionError("a request whose socket closed is still decoding after a minute")
    saved = await database_sync_to_async(list)(Run.objects.filter(prompt=prompt))  # saved as it ended, if it started
    assert all(run.status == "cancelled" and len(run.tokens) < 8000 for run in saved), [(r.status, len(r.tokens)) for r in saved]


async def test_inspect_holds_off_end_of_sequence_inside_min_tokens_as_the_run_did():
    communicator = await connect()
    frame = generate("m", "Say hi.", mode="chat", params={"temperature": 0, "max_tokens": 12, "min_tokens": 12}, top_n=20)
    await communicator.send_json_to(frame)
    tokens = [e for e in await events_until_end(communicator, "m") if e["type"] == "token"]
    step = 3
    await communicator.send_json_to(
        {
            "type": "inspect",
            "request_id": "mi",
            "prompt": "Say hi.",
            "mode": "chat",
            "prefix_tokens": [t["id"] for t in tokens[:step]],
            "params": frame["params"],
            "top_n": 20,
        }
    )
    inspection = (await events_until_end(communicator, "mi", "inspection"))[-1]
    seen = {a["id"]: (a["raw_prob"], a["prob"]) for a in inspection["traces"][0]["alternatives"]}
    run = {a["id"]: (a["raw_prob"], a["prob"]) for a in tokens[step]["alternatives"]}
    assert seen.keys() == run.keys()
    for token_id, (raw, prob) in run.items():
        assert seen[token_id][0] == pytest.approx(raw, rel=1e-6, abs=1e-12)
        assert seen[token_id][1] == pytest.approx(prob, rel=1e-6, abs=1e-12)
    await communicator.disconnect()


async def test_a_slow_inspection_can_be_cancelled():
    communicator = await connect()
    await communicator.send_json_to(generate("long", "Count:", params={"temperature": 0, "max_tokens": 300, "ignore_eos": True}))
    tokens = [e["id"] for e in await events_until_end(communicator, "long") if e["type"] == "token"]
    await communicator.send_json_to({"type": "inspect", "request_id": "far", "prompt": "Count:", "prefix_tokens": tokens[:299]})
    await communicator.send_json_to({"type": "cancel", "request_id": "far"})
    event = (await events_until_end(communicator, "far", "inspection"))[-1]
    assert event["type"] == "error" and event["error"]["code"] == "cancelled", event
    await communicator.disconnect()


SURROGATE_FRAMES = [  # (frame with a lone-surrogate escape, the field named)
    (
        '{"type": "generate", "request_id": "s1", "prompt": "hi", "params": {"stop": ["\\ud800"], "max_tokens": 2}}',
        "params.stop.0",
    ),
    ('{"type": "generate", "request_id": "s2", "prompt": "a\\ud800"}', "prompt"),
    ('{"type": "generate", "request_id": "s3", "prompt": "hi", "params": {"logit_bias": {"\\ud800": 1}}}', "params.logit_bias"),
    ('{"type": "generate", "request_id": "s4", "prompt": "hi", "\\ud800": 1}', None),
    ('{"type": "tokenize", "request_id": "s5", "text": "\\udfff"}', "text"),
    ('{"type": "inspect", "request_id": "s6", "prompt": "x", "mode": "chat", "system": "\\ud800"}', "system"),
]


@pytest.mark.parametrize("frame, param", SURROGATE_FRAMES)
async def test_a_lone_surrogate_is_refused_at_the_edge_and_nothing_is_saved(frame, param):
    from channels.db import database_sync_to_async

    from playground.runs.models import Run

    communicator = await connect()
    request_id = json.loads(frame)["request_id"]
    event = await expect_error(communicator, frame, "invalid_value", param)
    assert event["request_id"] == request_id
    await communicator.send_json_to(generate("after", "Hi", params={"max_tokens": 1}))
    assert (await events_until_end(communicator, "after"))[-1]["type"] == "done"
    await communicator.disconnect()
    assert await database_sync_to_async(Run.objects.exclude(prompt="Hi").count)() == 0


async def test_a_huge_logit_bias_key_is_named_in_generate_and_inspect():
    communicator = await connect()
    key = "7" * 5000
    for frame in (
        generate("g", "hi", params={"logit_bias": {key: 1}}),
        {"type": "inspect", "request_id": "i", "prompt": "hi", "variants": [{"logit_bias": {key: 1}}]},
    ):
        event = await expect_error(
            communicator, frame, "invalid_value", "params.logit_bias" if frame["type"] == "generate" else "variants.0.logit_bias"
        )
        assert event["request_id"] == frame["request_id"] and len(event["error"]["message"]) < 300
    await communicator.disconnect()


async def test_the_largest_seed_works_with_several_samples_and_sample_0_is_unchanged():
    communicator = await connect()
    params = {"temperature": 1.0, "max_tokens": 3, "seed": 2**63 - 1}
    await communicator.send_json_to(generate("n1", "Colours:", params=params))
    single = (await events_until_end(communicator, "n1"))[-1]
    await communicator.send_json_to(generate("n3", "Colours:", params=params | {"n": 3}))
    events = await events_until_end(communicator, "n3")
    assert events[0]["type"] == "started" and events[0]["seed"] == 2**63 - 1, events[-1]
    done = events[-1]
    assert done["type"] == "done" and len(done["samples"]) == 3
    assert done["samples"][0]["text"] == single["text"]  # sample 0 draws exactly as the n = 1 run
    # sample 1 wrapped to seed 0: it draws as a run seeded 0
    await communicator.send_json_to(generate("z", "Colours:", params=params | {"seed": 0}))
    assert (await events_until_end(communicator, "z"))[-1]["text"] == done["samples"][1]["text"]
    await communicator.disconnect()


async def test_a_cancel_that_crosses_the_end_of_its_run_is_an_unknown_request():
    communicator = await connect()
    await communicator.send_json_to(generate("x", "Hi", params={"max_tokens": 2}))
    while (await communicator.receive_json_from(timeout=TIMEOUT))["type"] != "token":
        pass  # the run is going: the cancel is passed on to the worker, which may finish first
    await communicator.send_json_to({"type": "cancel", "request_id": "x"})
    events = await events_until_end(communicator, "x")
    if events[-1]["type"] == "done" and events[-1]["reason"] != "cancelled":
        reply = await communicator.receive_json_from(timeout=TIMEOUT)
        assert reply["type"] == "error" and reply["error"]["code"] == "unknown_request" and reply["request_id"] == "x"
    else:
        assert events[-1]["reason"] == "cancelled"
    assert await communicator.receive_nothing(timeout=0.5)
    await communicator.disconnect()


async def test_cancelling_a_request_queued_behind_another_connections_run_answers_at_once():
    import time

    from channels.db import database_sync_to_async

    from playground.runs.models import Run

    busy, waiting = await connect(), await connect()
    # the busy run takes every row, so the other request really waits in line
    rows = settings.INFERENCE["MAX_BATCH"]
    await busy.send_json_to(generate("long", "Once", params={"max_tokens": 3000, "ignore_eos": True, "n": rows}))
    while (await busy.receive_json_from(timeout=TIMEOUT))["type"] != "token":
        pass
    await waiting.send_json_to(generate("queued", "Never run", params={"max_tokens": 5}))
    await waiting.send_json_to({"type": "cancel", "request_id": "queued"})
    began = time.monotonic()
    event = await waiting.receive_json_from(timeout=10)
    answered_in = time.monotonic() - began
    assert event["type"] == "error" and event["error"]["code"] == "cancelled" and event["request_id"] == "queued", event
    assert answered_in < 10  # not after the 3000-token run
    await busy.send_json_to({"type": "cancel", "request_id": "long"})
    assert (await events_until_end(busy, "long"))[-1]["reason"] == "cancelled"
    await busy.disconnect()
    await waiting.disconnect()
    assert await database_sync_to_async(Run.objects.filter(prompt="Never run").count)() == 0


async def test_a_socket_closed_with_queued_requests_runs_none_of_them():
    """What holds whatever the timing (one request running when the socket closes, or several that
    had already joined the batch): no request of the closed socket runs to its end; each is
    cancelled (saved as such, short of its max_tokens) or never starts (nothing saved); the one
    seen streaming is saved cancelled; and the worker is free for the next socket."""
    from channels.db import database_sync_to_async

    from playground.runs.models import Run

    communicator = await connect()
    for i in range(8):
        await communicator.send_json_to(generate(f"q{i}", f"Queued {i}", params={"max_tokens": 3000, "ignore_eos": True}))
    while (event := await communicator.receive_json_from(timeout=TIMEOUT))["type"] != "token":
        pass
    streaming = f"Queued {event['request_id'].removeprefix('q')}"
    await communicator.disconnect()
    other = await connect()
    await other.send_json_to(generate("next", "Hi", params={"max_tokens": 1}))
    assert (await events_until_end(other, "next"))[-1]["type"] == "done"
    await other.disconnect()
    queued = Run.objects.filter(prompt__startswith="Queued")
    for _ in range(300):  # a run is saved as it ends, on the worker's thread
        saved = await database_sync_to_async(list)(queued)
        if streaming in {run.prompt for run in saved}:
            break
        await asyncio.sleep(0.1)
    assert streaming in {run.prompt for run in saved}, "the run that was streaming when the socket closed was not saved"
    for run in saved:
        assert (run.status, run.reason) == ("cancelled", "cancelled"), (run.prompt, run.status)
        assert len(run.tokens) < 3000


async def test_tokenize_pages_its_answer_and_every_page_fits_a_frame():
    communicator = await connect()
    text = "🎉" * 20000  # 60,000 tokens: one answer would be several MiB
    pages, offset = [], 0
    while offset is not None:
        await communicator.send_json_to({"type": "tokenize", "request_id": "p", "text": text, "mode": "plain", "offset": offset})
        reply = await communicator.receive_from(timeout=TIMEOUT)
        assert len(reply.encode()) < 1024 * 1024
        page = json.loads(reply)
        assert page["type"] == "tokens" and page["offset"] == offset, page
        pages.append(page)
        offset = page["next_offset"]
    assert sum(len(p["tokens"]) for p in pages) == pages[0]["count"] == 60000
    assert all(len(p["tokens"]) <= 4096 for p in pages)
    await communicator.disconnect()


async def test_per_client_limits_hold_across_connections(settings):
    from playground.edge import client_limits

    settings.INFERENCE = settings.INFERENCE | {
        "CLIENT_LIMITS": {"MAX_ACTIVE_REQUESTS": 2, "REQUESTS_PER_SECOND": 0.01, "BURST": 4}
    }
    client_limits.client_limits.cache_clear()  # made again with the narrowed settings (cleared after by the conftest)
    first, second = await connect(), await connect()
    slow = {"params": {"max_tokens": 3000, "ignore_eos": True}}
    await first.send_json_to(generate("a", "Once", **slow))
    await second.send_json_to(generate("b", "Once", **slow))
    event = await expect_error(second, generate("c", "Once", **slow), "too_many_requests", None)
    assert event["request_id"] == "c" and event["error"]["retry_after"] is None
    for communicator, request_id in ((first, "a"), (second, "b")):
        await communicator.send_json_to({"type": "cancel", "request_id": request_id})
        await events_until_end(communicator, request_id)
    await first.send_json_to({"type": "tokenize", "request_id": "t1", "text": "x"})
    await events_until_end(first, "t1", "tokens")
    await first.send_json_to({"type": "tokenize", "request_id": "t2", "text": "x"})
    await events_until_end(first, "t2", "tokens")
    event = await expect_error(second, {"type": "tokenize", "request_id": "t3", "text": "x"}, "rate_limited", None)
    assert event["request_id"] == "t3" and event["error"]["retry_after"] > 0
    await first.disconnect()
    await second.disconnect()
