"""One request type, checked once: ``GenerationRequest.from_params`` owns every range and every rule
between values, ``to_json``/``from_json`` carry it as plain data, and seeds are set on a valid
request without its checks run again."""

from __future__ import annotations

import json

import pytest

from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.decoding.request import (
    MAX_WATCH,
    SEED_BITS,
    WIRE_KEYS,
    GenerationRequest,
    sample_seed,
)
from inference.errors import ParamError
from inference.sampling import SamplingParams
from inference.sampling.params import MAX_SEED


def refused(**fields) -> ParamError:
    with pytest.raises(ParamError) as caught:
        GenerationRequest.from_params({"prompt": "Hi", **fields})
    return caught.value


def test_from_params_splits_the_flat_params_into_their_parts():
    request = GenerationRequest.from_params(
        {
            "prompt": "Hi",
            "params": {"temperature": 0.5, "max_tokens": 7, "speculative": {"k": 3}},
            "top_n": 9,
            "prefix_tokens": [4, 5],
            "typed_tokens": 1,
            "branched": True,
            "watch": [1, 2],
        }
    )
    assert request.sampling == SamplingParams(temperature=0.5)
    assert request.loop == LoopParams(max_tokens=7)
    assert request.speculative == SpeculativeParams(k=3)
    assert (request.top_n, request.prefix_tokens, request.typed_tokens, request.branched, request.watch) == (
        9,
        (4, 5),
        1,
        True,
        (1, 2),
    )


@pytest.mark.parametrize(
    "fields, param, code",
    [
        ({"params": {"temperature": -1}}, "params.temperature", "invalid_value"),
        ({"params": {"colour": 1}}, "params.colour", "unknown_param"),
        ({"params": []}, "params", "invalid_value"),
        ({"params": {"speculative": {"k": 99}}}, "params.speculative.k", "invalid_value"),
        ({"params": {"speculative": {"draft": "x"}, "n": 2}}, "params.speculative.draft", "invalid_value"),
        ({"top_n": 0}, "top_n", "invalid_value"),
        ({"use_cache": "yes"}, "use_cache", "invalid_value"),
        ({"prefix_tokens": [1, -2]}, "prefix_tokens.1", "invalid_value"),
        ({"watch": [3, 3]}, "watch", "invalid_value"),
        ({"watch": list(range(MAX_WATCH + 1))}, "watch", "invalid_value"),
        ({"prefix_tokens": [1], "typed_tokens": 2}, "typed_tokens", "invalid_value"),
        ({"prefix_tokens": [1], "typed_tokens": 1, "branched": True}, "branched", "invalid_value"),
    ],
)
def test_each_bad_field_is_refused_by_name(fields, param, code):
    error = refused(**fields)
    assert (error.param, error.code) == (param, code)


@pytest.mark.parametrize(
    "params, param",
    [
        ({"speculative": {"k": 2}, "n": 2}, "params.speculative"),
        ({"speculative": {"k": 2}, "num_beams": 2}, "params.speculative"),
        ({"grammar": {"type": "regex", "pattern": "a+"}, "num_beams": 2}, "params.num_beams"),
        ({"grammar": {"type": "regex", "pattern": "a+"}, "ignore_eos": True}, "params.ignore_eos"),
    ],
)
def test_the_rules_between_values_are_kept_in_one_place_for_every_maker(params, param):
    """``from_params`` names them under ``params.``; a request made in code meets the same rule."""
    error = refused(params=params)
    assert error.param == param and error.message.startswith("params.")
    sampling, loop, speculative = (
        SamplingParams.from_dict({k: v for k, v in params.items() if k in SamplingParams.field_names()}),
        LoopParams.from_dict({k: v for k, v in params.items() if k in LoopParams.field_names()}),
        SpeculativeParams.from_value(params.get("speculative")),
    )
    with pytest.raises(ParamError) as caught:
        GenerationRequest("Hi", sampling=sampling, loop=loop, speculative=speculative)
    assert caught.value.param == param.removeprefix("params.")


def test_the_wire_form_round_trips_through_json():
    request = GenerationRequest.from_params(
        {
            "prompt": "Hi",
            "params": {"temperature": 0.3, "logit_bias": {"5": -2}, "stop": ["\n"], "speculative": {"k": 2}},
            "prefix_tokens": [3],
            "typed_tokens": 1,
            "watch": [7],
            "prompt_scores": True,
        }
    )
    carried = json.loads(json.dumps(request.to_json()))
    assert sorted(carried) == sorted(WIRE_KEYS)
    assert GenerationRequest.from_json(carried) == request


def test_a_malformed_wire_request_is_refused_naming_what_is_wrong():
    carried = GenerationRequest("Hi").to_json()
    del carried["watch"]
    with pytest.raises(ParamError) as caught:
        GenerationRequest.from_json(carried)
    assert (caught.value.param, caught.value.code) == ("watch", "missing_field")
    carried = GenerationRequest("Hi").to_json() | {"params": {"temperature": "hot"}}
    with pytest.raises(ParamError) as caught:
        GenerationRequest.from_json(carried)
    assert caught.value.param == "temperature"


def test_a_drawn_seed_and_each_samples_seed_keep_every_other_value():
    request = GenerationRequest("Hi", sampling=SamplingParams(temperature=0.4, top_k=3), loop=LoopParams(n=3))
    seeded = request.with_seed()
    seed = seeded.sampling.seed
    assert seed is not None and 0 <= seed < 2**SEED_BITS
    assert seeded == GenerationRequest("Hi", sampling=SamplingParams(temperature=0.4, top_k=3, seed=seed), loop=LoopParams(n=3))
    assert seeded.with_seed() is seeded
    for i in range(3):
        assert seeded.sample_sampling(i) == SamplingParams(temperature=0.4, top_k=3, seed=sample_seed(seed, i))
    with pytest.raises(ValueError):
        request.sample_sampling(0)


def test_a_sample_seed_wraps_to_stay_a_valid_seed():
    request = GenerationRequest("Hi", sampling=SamplingParams(seed=MAX_SEED), loop=LoopParams(n=2))
    assert request.sample_sampling(1).seed == 0
