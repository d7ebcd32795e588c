"""The ``token`` event's one class (``playground.wire.token_event.TokenEvent``): the JSON it writes is
the event as it always was plus ``origin``, it reads back to the same object, it refuses a bad
field by name, an event saved before ``origin`` reads with the origin it implies, and the JSON
Schema file the page's test fixtures are checked against is the class's own, current."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import jsonschema
import pytest

from inference.batching.scheduler import BatchStep
from inference.decoding.generation import GenerationRequest
from inference.decoding.loop_params import LoopParams
from inference.sampling import SamplingParams
from playground.wire import token_event
from playground.wire.events import token_event as token_event_dict
from playground.wire.token_event import EventError, TokenEvent, implied_origin
from tests.inference.helpers import collect

# The event's keys today, in order, as written by hand (docs/websocket-api.md): the one pin of the
# wire format, so a field added to ``TokenEvent`` is added here too. ``origin`` is the newest (the
# event was sent without it before), ``drafted`` and ``batch`` follow when the run has them.
KEYS = [
    "type", "request_id", "sample", "index", "id", "token", "text", "raw_prob", "prob", "removed_by", "forced",
    "origin", "draw", "draw_interval", "alternatives", "stages", "entropy", "watched", "elapsed_ms",
]  # fmt: skip


@pytest.fixture(scope="module")
def steps(tiny_runtime):
    request = GenerationRequest(
        "Once upon a time",
        sampling=SamplingParams(temperature=0.8, top_k=20, seed=4),
        loop=LoopParams(max_tokens=3),
        prefix_tokens=(42, 43),
        branched=True,
        watch=(7,),
    )
    return collect(tiny_runtime, request)[1]


def test_the_json_is_the_old_event_plus_origin_in_the_same_order(tiny_runtime, steps):
    event = token_event_dict("r-1", steps[0], tiny_runtime.codec, BatchStep(9, 2, 2), speculative=True)
    assert list(event) == [*KEYS, "drafted", "batch"]
    assert event["batch"] == {"step": 9, "rows": 2, "requests": 2} and event["drafted"] is False
    plain = token_event_dict("r-1", steps[1], tiny_runtime.codec)
    assert list(plain) == KEYS  # no drafted, no batch
    assert [a["token"] for a in plain["alternatives"]] == [
        tiny_runtime.codec.token_text(a.id) for a in steps[1].trace.alternatives
    ]
    assert plain["watched"][0] == {**steps[1].trace.watched[0].to_dict(), "token": tiny_runtime.codec.token_text(7)}
    assert [token_event_dict("r", s, tiny_runtime.codec)["origin"] for s in steps] == [s.origin.value for s in steps]
    assert steps[1].origin.value == "branch"


def test_from_json_reads_back_what_to_json_wrote(tiny_runtime, steps):
    for step in steps:
        event = TokenEvent.of_step("r-1", step, tiny_runtime.codec, BatchStep(1, 1, 1))
        text = json.dumps(event.to_json())
        assert TokenEvent.from_json(json.loads(text)) == event
        assert json.dumps(TokenEvent.from_json(json.loads(text)).to_json()) == text


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"origin": "chosen"}, "origin"),
        ({"origin": "prompt"}, "origin"),  # a prompt token is never a token event
        ({"index": 1.5}, "index"),
        ({"forced": 0}, "forced"),
        ({"draw_interval": [0.1]}, "draw_interval"),
        ({"alternatives": [{"id": 1, "token": "a", "raw_prob": 0.5, "prob": "x", "removed_by": None}]}, "alternatives[0].prob"),
        ({"entropy": {"before": 1.0}}, "entropy.after"),
        ({"prob": None}, "prob"),
        ({"entropy": {"before": math.inf, "after": 1.0}}, "entropy.before"),
        ({"elapsed_ms": math.nan}, "elapsed_ms"),
        ({"stages": [{"name": "top_k", "kept": 3}, {"name": "top_p", "kept": -1}]}, "stages[1].kept"),
        ({"watched": [5]}, "watched[0]"),
        ({"alternatives": "none"}, "alternatives"),
        ({"sample": True}, "sample"),
    ],
)
def test_a_bad_field_is_named(tiny_runtime, steps, change, path):
    event = token_event_dict("r-1", steps[0], tiny_runtime.codec) | change
    with pytest.raises(EventError) as error:
        TokenEvent.from_json(event)
    assert error.value.path == path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"entropy": {"before": math.inf, "after": 1.0}}, "entropy.before: must be a finite number, got a number"),
        ({"prob": 1.5}, "prob: must be a number from 0 to 1, got 1.5"),
        ({"index": -1}, "index: must be an integer from 0 to 2.14748e+09, got -1"),
        ({"forced": None}, "forced: must not be null"),
        ({"alternatives": [{"id": 1}]}, "alternatives[0].token: is required"),
        ({"draw_interval": [0.1]}, "draw_interval: must have 2 to 2 items, got 1"),
        ({"origin": 3}, "origin: must be one of"),
    ],
)
def test_a_bad_field_is_said_what_is_wrong_with_it(tiny_runtime, steps, change, message):
    event = token_event_dict("r-1", steps[0], tiny_runtime.codec) | change
    with pytest.raises(EventError) as error:
        TokenEvent.from_json(event)
    assert str(error.value).startswith(message)


def test_an_event_without_origin_reads_with_the_one_it_implies(tiny_runtime, steps):
    base = {k: v for k, v in token_event_dict("r-1", steps[2], tiny_runtime.codec).items() if k != "origin"}
    assert TokenEvent.from_json(base).origin.value == "sampled"
    assert implied_origin(base | {"draw": None}) == "greedy"
    assert implied_origin(base | {"forced": True}) == "kept"  # only the run's request can say typed or branch
    assert implied_origin(base | {"drafted": True}) == "draft"
    grammar = [{"name": "grammar", "kept": 1}, {"name": "temperature", "kept": 1}]
    assert implied_origin(base | {"stages": grammar}) == "forced_by_grammar"
    narrowed = [{"name": "top_k", "kept": 1}, {"name": "grammar", "kept": 1}]  # top_k left one, not the grammar
    assert implied_origin(base | {"stages": narrowed}) == "sampled"


def test_the_schema_file_is_the_classs_own_and_current():
    assert token_event.SCHEMA_FILE.read_text(encoding="utf-8") == token_event.schema_text(), (
        "static/shared/token-event.schema.json is stale: run `python -m playground.wire.token_event --write`"
    )


def test_the_schema_accepts_real_events_and_refuses_what_from_json_refuses(tiny_runtime, steps):
    schema = TokenEvent.json_schema()
    validator = jsonschema.Draft202012Validator(schema)
    for step in steps:
        validator.validate(token_event_dict("r-1", step, tiny_runtime.codec, BatchStep(3, 1, 1), speculative=True))
    saved = {k: v for k, v in token_event_dict("r-1", steps[0], tiny_runtime.codec).items() if k not in ("type", "request_id")}
    validator.validate(saved)  # a saved run's token: the event without its envelope
    for change in ({"origin": "chosen"}, {"index": 1.5}, {"extra": 1}, {"draw_interval": [0.1]}):
        assert not validator.is_valid(token_event_dict("r-1", steps[0], tiny_runtime.codec) | change)
    assert not validator.is_valid({k: v for k, v in saved.items() if k != "origin"})


def test_of_step_takes_the_steps_own_origin(tiny_runtime, steps):
    typed = replace(steps[0], origin=type(steps[0].origin)("typed"))
    assert TokenEvent.of_step("r", typed, tiny_runtime.codec).to_json()["origin"] == "typed"
