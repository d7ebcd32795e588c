"""The client-frame parser on its own: no model, no Channels. Every bad frame becomes a
``ProtocolError`` naming its field (and the request id when it was readable); no other exception
escapes, and no error quotes more than a short excerpt of what it was sent."""

from __future__ import annotations

import json

import pytest

from playground.edge.frames import ProtocolError, parse_client_frame
from playground.runs.request_fields import record_fields
from playground.wire import channel_messages, events
from tests.client_frames import generate

SURROGATE = "\\ud800"  # a JSON escape of a lone surrogate: valid JSON, not encodable text


def refused(frame: str | dict) -> ProtocolError:
    text = frame if isinstance(frame, str) else json.dumps(frame)
    with pytest.raises(ProtocolError) as caught:
        parse_client_frame(text)
    return caught.value


def with_surrogate(frame: dict, marker: str = "@S@") -> str:
    """The frame as JSON with every ``marker`` replaced by a lone-surrogate escape."""
    return json.dumps(frame).replace(marker, SURROGATE)


@pytest.mark.parametrize(
    "frame, param",
    [
        (generate(prompt="a@S@b"), "prompt"),
        (generate(mode="chat", system="@S@"), "system"),
        (generate(params={"stop": ["ok", "x@S@"]}), "params.stop.1"),
        (generate(params={"stop": "@S@"}), "params.stop"),
        (generate(params={"dry_sequence_breakers": ["\n", "@S@"]}), "params.dry_sequence_breakers.1"),
        (generate(params={"logit_bias": {"1@S@": 1}}), "params.logit_bias"),
        (generate(params={"temp@S@": 1}), "params"),
        (generate(**{"col@S@our": 1}), None),
        (generate(parent_run="@S@"), "parent_run"),
        ({"type": "tokenize", "request_id": "t", "text": "@S@"}, "text"),
        ({"type": "inspect", "request_id": "i", "prompt": "x", "variants": [{"stop": ["@S@"]}]}, "variants.0.stop.0"),
        ({"type": "cancel", "request_id": "c", "why": "@S@"}, "why"),
    ],
)
def test_a_lone_surrogate_is_refused_by_field_with_the_request_id(frame, param):
    error = refused(with_surrogate(frame))
    assert (error.code, error.param) == ("invalid_value", param)
    assert error.request_id == frame["request_id"]
    assert "surrogate" in error.message
    json.dumps(error.to_event(), ensure_ascii=False).encode("utf-8")  # the error itself is sendable


def test_a_surrogate_in_the_request_id_or_type_is_refused_without_echoing_it():
    error = refused(with_surrogate(generate(request_id="r@S@")))
    assert error.param == "request_id" and error.request_id is None
    error = refused(with_surrogate({"type": "gen@S@", "request_id": "r"}))
    assert error.param == "type" and error.request_id == "r"


@pytest.mark.parametrize(
    "frame, param",
    [
        (generate(prompt="a@N@b"), "prompt"),
        (generate(params={"stop": ["x@N@"]}), "params.stop.0"),
        (generate(mode="chat", system="s@N@"), "system"),
        (generate(params={"logit_bias": {"1@N@": 1}}), "params.logit_bias"),
    ],
)
def test_a_nul_character_is_refused_by_field_since_no_run_could_store_it(frame, param):
    error = refused(json.dumps(frame).replace("@N@", "\\u0000"))
    assert (error.code, error.param, error.request_id) == ("invalid_value", param, "r")
    assert "U+0000" in error.message


def test_a_surrogate_pair_is_ordinary_text():
    frame = json.dumps(generate(prompt="x")).replace('"x"', '"\\ud83d\\ude00"')
    job = parse_client_frame(frame)
    assert job.request.prompt == "😀"


@pytest.mark.parametrize("digits", [41, 5000, 100_000])
def test_a_logit_bias_key_of_thousands_of_digits_is_named(digits):
    for frame in (
        generate(params={"logit_bias": {"9" * digits: 1}}),
        {"type": "inspect", "request_id": "r", "prompt": "x", "variants": [{"logit_bias": {"9" * digits: 1}}]},
        {"type": "inspect", "request_id": "r", "prompt": "x", "params": {"logit_bias": {"9" * digits: 1}}},
    ):
        error = refused(frame)
        assert error.code == "invalid_value" and error.request_id == "r"
        assert error.param in ("params.logit_bias", "variants.0.logit_bias")
        assert len(error.to_event()["error"]["message"]) <= events.MAX_ERROR_MESSAGE


def test_a_long_but_plausible_logit_bias_key_is_named_in_full():
    error = refused(generate(params={"logit_bias": {"x1": 1}}))
    assert error.param == "params.logit_bias.x1"


@pytest.mark.parametrize(
    "frame",
    [
        '{"type": "generate", "request_id": "r", "prompt": "hi", "params": {"seed": 1' + "0" * 5000 + "}}",
        '{"type": "generate", "request_id": "r", "prompt": "hi", "top_n": -' + "9" * 100_000 + "}",
        '{"type": "generate", "request_id": "r", "prompt": "hi", "params": {"top_p": 1e400}}',
        '{"type": "generate", "request_id": "r", "prompt": "hi", "params": {"top_p": -Infinity}}',
        "[" * 100_000 + "]" * 100_000,  # read (its depth cut), but no object
    ],
)
def test_numbers_too_large_and_a_frame_that_is_no_object_are_invalid_json(frame):
    error = refused(frame)
    assert error.code == "invalid_json"
    assert len(error.to_event()["error"]["message"]) <= events.MAX_ERROR_MESSAGE


def test_an_object_nested_past_any_field_is_refused_by_its_field():
    error = refused('{"a":' * 50_000 + "1" + "}" * 50_000)
    assert (error.code, error.param) == ("nested_too_deep", "a")


@pytest.mark.parametrize(
    "frame, param",
    [
        (generate(top_n="x" * 100_000), "top_n"),
        (generate(params={"temperature": "x" * 100_000}), "params.temperature"),
        (generate(params={"stop": ["x" * 100_000]}), "params.stop.0"),
        (generate(prefix_tokens=["x" * 100_000]), "prefix_tokens.0"),
        (generate(mode="x" * 100_000), "mode"),
        (generate(use_cache="x" * 100_000), "use_cache"),
        (generate(prompt_scores="x" * 100_000), "prompt_scores"),
        ({"type": "x" * 100_000, "request_id": "r"}, "type"),
        (generate(params={"logit_bias": {"5": "x" * 100_000}}), "params.logit_bias.5"),
    ],
)
def test_errors_quote_only_a_short_excerpt_of_a_huge_value(frame, param):
    event = refused(frame).to_event()
    assert event["error"]["param"] == param and event["request_id"] == "r"
    assert len(event["error"]["message"]) <= events.MAX_ERROR_MESSAGE
    assert len(json.dumps(event)) < 1000


def test_an_unknown_key_of_any_length_gives_a_bounded_error():
    event = refused(generate(**{"k" * 100_000: 1})).to_event()
    assert event["error"]["code"] == "unknown_param" and len(json.dumps(event)) < 1000


@pytest.mark.parametrize(
    "frame, code, param",
    [
        ("{not json", "invalid_json", None),
        ("[1, 2]", "invalid_json", None),
        ("null", "invalid_json", None),
        ({"type": "dance", "request_id": "r"}, "unknown_type", "type"),
        ({"type": ["generate"], "request_id": "r"}, "unknown_type", "type"),
        (generate(prompt=None), "missing_field", "prompt"),
        (generate(request_id=5), "invalid_value", "request_id"),
        (generate(params={"n": 2, "num_beams": 2}), "invalid_value", "params.num_beams"),
        (generate(params={"stop": {"a": 1}}), "invalid_value", "params.stop"),
        (
            generate(params={"grammar": {"type": "regex", "pattern": "a+"}, "ignore_eos": True}),
            "invalid_value",
            "params.ignore_eos",
        ),
        (generate(params={"grammar": {"type": "regex", "pattern": "a+"}, "num_beams": 2}), "invalid_value", "params.num_beams"),
        (generate(params={"sampler_order": [[1]]}), "invalid_value", "params.sampler_order"),
        (generate(params={"dry_sequence_breakers": [{}]}), "invalid_value", "params.dry_sequence_breakers"),
        (generate(params={"logit_bias": []}), "invalid_value", "params.logit_bias"),
        (generate(params={"seed": 2**63}), "invalid_value", "params.seed"),
        (
            {"type": "inspect", "request_id": "r", "prompt": "x", "params": {"logit_bias": {"-1": 1}}},
            "invalid_value",
            "params.logit_bias.-1",
        ),
        (
            {"type": "inspect", "request_id": "r", "prompt": "x", "variants": [{"temperature": 9}]},
            "invalid_value",
            "variants.0.temperature",
        ),
        ({"type": "tokenize", "request_id": "r", "text": "x", "limit": 0}, "invalid_value", "limit"),
        ({"type": "tokenize", "request_id": "r", "text": "x", "offset": -1}, "invalid_value", "offset"),
        (generate(prefix_tokens=[1, 2], typed_tokens=3), "invalid_value", "typed_tokens"),
        (generate(typed_tokens=-1), "invalid_value", "typed_tokens"),
        (generate(prefix_tokens=[1], typed_tokens=True), "invalid_value", "typed_tokens"),
        (generate(prefix_tokens=[1], branched="yes"), "invalid_value", "branched"),
        (generate(branched=True), "invalid_value", "branched"),  # no prefix token to be the alternative
        (generate(prefix_tokens=[1, 2], typed_tokens=2, branched=True), "invalid_value", "branched"),  # all typed
    ],
)
def test_bad_frames_name_their_field(frame, code, param):
    error = refused(frame)
    assert (error.code, error.param) == (code, param)


def test_the_largest_seed_is_accepted_with_several_samples():
    job = parse_client_frame(json.dumps(generate(params={"seed": 2**63 - 1, "n": 8})))
    assert job.request.sampling.seed == 2**63 - 1 and job.request.loop.n == 8


def test_tokenize_pages_default_to_the_first_page():
    job = parse_client_frame(json.dumps({"type": "tokenize", "request_id": "t", "text": "x"}))
    assert (job.offset, job.limit) == (0, events.TOKENIZE_PAGE[1])


@pytest.mark.parametrize(
    "frame",
    [
        generate(
            mode="chat",
            system="Be brief.",
            top_n=7,
            use_cache=False,
            prompt_scores=True,
            prefix_tokens=[5, 6],
            parent_run="a" * 22,
            branch_index=1,
            typed_tokens=1,
            branched=True,  # 5: the alternative picked, then 6 typed
            params={"temperature": 0.7, "logit_bias": {"42": -3}, "stop": "x", "seed": 2**63 - 1, "n": 2, "max_tokens": 9},
        ),
        generate(),
        generate(
            "c",
            None,
            mode="chat",
            messages=[{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A is"}],
            continue_final_message=True,
            save=False,
        ),
        {"type": "tokenize", "request_id": "t", "text": "hello", "mode": "plain", "offset": 3, "limit": 10},
        {"type": "tokenize", "request_id": "t", "messages": [{"role": "user", "content": "hi"}]},
        {
            "type": "inspect",
            "request_id": "i",
            "messages": [{"role": "assistant", "content": "a"}],
            "continue_final_message": True,
        },
        {
            "type": "inspect",
            "request_id": "i",
            "prompt": "x",
            "prefix_tokens": [1],
            "params": {"top_p": 0.9},
            "variants": [{"temperature": 0.1}, {"temperature": 2.0, "min_tokens": 1}],
            "top_n": 12,
        },
    ],
)
def test_a_job_crosses_the_channel_layer_as_plain_data_and_comes_back_the_same(frame):
    import msgpack  # what the Redis channel layer packs messages with

    job = parse_client_frame(json.dumps(frame))
    message = channel_messages.request(job, "reply")
    carried = msgpack.unpackb(msgpack.packb(message), raw=False)
    assert channel_messages.job_from_dict(carried["job"]) == job
    assert carried["quick"] is (frame["type"] in ("tokenize", "inspect", "score"))  # no decode slot needed


def test_branched_and_typed_tokens_reach_the_generation_request():
    job = parse_client_frame(json.dumps(generate(prefix_tokens=[5, 6, 7], typed_tokens=1, branched=True)))
    assert (job.request.typed_tokens, job.request.branched, job.typed_tokens) == (1, True, 1)
    assert job.request.prefix_plan.branch_index == 1
    assert parse_client_frame(json.dumps(generate(prefix_tokens=[5]))).request.branched is False


def test_the_recorder_gets_the_branch_from_the_typed_job():
    frame = generate(parent_run="b" * 22, branch_index=3, prefix_tokens=[1, 2], typed_tokens=2)
    job = parse_client_frame(json.dumps(frame))
    assert record_fields(job) | {} == {
        "prompt": "hi",
        "mode": "completion",
        "system": None,
        "prefix_tokens": [1, 2],
        "watch": [],
        "parent_run": "b" * 22,
        "branch_index": 3,
        "typed_tokens": 2,
        "messages": None,
        "continue_final_message": False,
        "save": True,
    }


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages.0.role"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages.0.content"),
        ({"messages": [{"role": "user", "content": "x", "name": "n"}]}, "messages.0.name"),
        ({"messages": [{"role": "user", "content": "x"}], "prompt": "p"}, "prompt"),
        ({"messages": [{"role": "user", "content": "x"}], "continue_final_message": True}, "continue_final_message"),
        ({"messages": [{"role": "user", "content": "x"}], "mode": "completion"}, "mode"),
        ({"messages": [{"role": "user", "content": "x"}], "save": "no"}, "save"),
    ],
)
def test_chat_messages_are_checked_naming_the_field(fields, param):
    frame = generate("c", None) | fields
    with pytest.raises(ProtocolError) as caught:
        parse_client_frame(json.dumps(frame))
    assert caught.value.param == param


def test_a_messages_frame_is_a_chat_request_with_its_turns():
    turns = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]
    job = parse_client_frame(json.dumps(generate("c", None, messages=turns)))
    assert job.request.mode == "chat" and job.request.chat.to_list() == turns
    assert job.request.prompt == "Q" and record_fields(job)["messages"] == turns
    assert record_fields(job)["continue_final_message"] is False
    continued = generate("c", None, messages=[*turns, {"role": "assistant", "content": "A"}], continue_final_message=True)
    assert record_fields(parse_client_frame(json.dumps(continued)))["continue_final_message"] is True
