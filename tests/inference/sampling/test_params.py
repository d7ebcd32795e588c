"""SamplingParams: validation that names the field, plain-data round trips, enabled stages."""

from __future__ import annotations

import json

import pytest

from inference.errors import ParamError
from inference.sampling import DEFAULT_ORDER, SamplerChain, SamplingParams

OUT_OF_RANGE = [
    ("temperature", -0.1),
    ("temperature", 2.01),
    ("top_k", -1),
    ("top_p", 0.0),
    ("top_p", 1.5),
    ("min_p", -0.01),
    ("min_p", 1.01),
    ("typical_p", 0.0),
    ("typical_p", 1.01),
    ("top_n_sigma", -1.0),
    ("repetition_penalty", 0.0),
    ("repetition_penalty", -1.0),
    ("frequency_penalty", 2.5),
    ("frequency_penalty", -2.5),
    ("presence_penalty", 2.5),
    ("presence_penalty", -2.01),
    ("penalty_window", -1),
    ("dry_multiplier", -0.1),
    ("dry_base", 0.99),
    ("dry_allowed_length", 0),
    ("dry_penalty_last_n", -2),
    ("no_repeat_ngram_size", -1),
    ("epsilon_cutoff", 1.0),
    ("epsilon_cutoff", -0.1),
    ("eta_cutoff", 1.0),
    ("xtc_probability", 1.1),
    ("xtc_threshold", -0.1),
    ("mirostat", 1),
    ("mirostat", 3),
    ("mirostat_tau", 0.0),
    ("mirostat_eta", 1.5),
    ("dynatemp_range", -0.1),
    ("dynatemp_range", 2.5),
    ("dynatemp_exponent", -1.0),
    ("seed", -1),
    ("seed", 2**63),
    ("temperature", float("nan")),
    ("top_p", float("inf")),
]


@pytest.mark.parametrize("name, value", OUT_OF_RANGE)
def test_out_of_range_values_name_the_field_and_its_range(name, value):
    with pytest.raises(ParamError) as err:
        SamplingParams.from_dict({name: value})
    assert err.value.param == name
    assert err.value.code == "invalid_value"
    message = err.value.message
    assert message.startswith(name)
    assert any(rng in message for rng in (" in [", " in (", ">= ", "> ", "0 (off) or 2 (")), message


@pytest.mark.parametrize(
    "name, value",
    [
        ("top_k", True),
        ("top_k", 2.0),
        ("top_k", "3"),
        ("temperature", "hot"),
        ("temperature", True),
        ("seed", 1.5),
        ("logit_bias", [1, 2]),
        ("sampler_order", "top_k"),
        ("dry_sequence_breakers", "\n"),
        ("dry_sequence_breakers", [""]),
        ("mirostat", 2.0),
    ],
)
def test_wrong_types_are_invalid_values(name, value):
    with pytest.raises(ParamError) as err:
        SamplingParams.from_dict({name: value})
    assert err.value.param == name and err.value.code == "invalid_value"


def test_ints_are_fine_where_floats_are_expected():
    params = SamplingParams.from_dict({"temperature": 1, "top_p": 1, "min_p": 0})
    assert params.temperature == 1.0 and isinstance(params.temperature, float)


def test_unknown_keys():
    with pytest.raises(ParamError) as err:
        SamplingParams.from_dict({"temprature": 0.5})
    assert err.value.param == "temprature" and err.value.code == "unknown_param"


def test_logit_bias_keys_and_values():
    params = SamplingParams.from_dict({"logit_bias": {"42": 5, "7": -100}})
    assert dict(params.logit_bias) == {7: -100.0, 42: 5.0}
    for bad, param in (
        ({"-1": 1}, "logit_bias.-1"),
        ({"x": 1}, "logit_bias.x"),
        ({"3": 101}, "logit_bias.3"),
        ({"3": "1"}, "logit_bias.3"),
    ):
        with pytest.raises(ParamError) as err:
            SamplingParams.from_dict({"logit_bias": bad})
        assert err.value.param == param


def test_sampler_order_errors():
    for order, fragment in ((["top_k", "nope"], "unknown stage 'nope'"), (["top_k", "top_k"], "appears twice")):
        with pytest.raises(ParamError) as err:
            SamplingParams.from_dict({"sampler_order": order})
        assert err.value.param == "sampler_order" and fragment in err.value.message
    with pytest.raises(ParamError) as err:
        SamplingParams.from_dict({"top_p": 0.9, "sampler_order": ["top_k"]})
    assert err.value.param == "sampler_order" and "top_p" in err.value.message
    # a subset that holds every enabled stage is fine
    assert SamplingParams(top_p=0.9, sampler_order=("top_p",)).enabled_stages() == ("top_p",)


def test_to_dict_is_complete_json_and_round_trips():
    params = SamplingParams(temperature=0.7, logit_bias={3: 1.5}, seed=5, top_n_sigma=None)
    data = params.to_dict()
    assert set(data) == SamplingParams.field_names()
    assert data["logit_bias"] == {"3": 1.5} and data["top_n_sigma"] == 0.0
    assert data["sampler_order"] == list(DEFAULT_ORDER)
    assert SamplingParams.from_dict(json.loads(json.dumps(data))) == params


def test_from_json_rebuilds_what_to_dict_wrote():
    """The worker's rebuild of the carried settings: equal, and written back byte for byte."""
    params = SamplingParams(
        grammar={"type": "choice", "options": ["yes", "no"]},
        logit_bias={7: -2, 3: 1.5},
        temperature=0.7,
        top_n_sigma=None,
        dry_multiplier=0.8,
        dry_sequence_breakers=("\n", "."),
        top_p=0.9,
        mirostat=2,
        sampler_order=tuple(reversed(DEFAULT_ORDER)),
        seed=2**63 - 1,
    )
    for made in (params, SamplingParams()):
        text = json.dumps(made.to_dict())
        rebuilt = SamplingParams.from_json(json.loads(text))
        assert rebuilt == made and json.dumps(rebuilt.to_dict()) == text
        assert rebuilt.enabled_stages() == made.enabled_stages()
    assert SamplingParams.from_json({"top_k": 3}) == SamplingParams(top_k=3)  # a field left out keeps its default


@pytest.mark.parametrize(
    "data, param",
    [
        ({"temperature": "hot"}, "temperature"),
        ({"temperature": True}, "temperature"),
        ({"temperature": 1}, "temperature"),  # to_dict writes a number field as a float
        ({"top_k": 4.0}, "top_k"),
        ({"logit_bias": {"x": 1.0}}, "logit_bias.x"),
        ({"logit_bias": [1]}, "logit_bias"),
        ({"dry_sequence_breakers": "ab"}, "dry_sequence_breakers"),
        ({"sampler_order": ["nope"]}, "sampler_order"),
        ({"grammar": {"type": "nope"}}, "grammar.type"),
        ({"temprature": 1.0}, "temprature"),
        ([], "params"),
    ],
)
def test_from_json_refuses_a_malformed_carried_dict_naming_the_field(data, param):
    with pytest.raises(ParamError) as caught:
        SamplingParams.from_json(data)
    assert caught.value.param == param


def test_from_json_leaves_the_ranges_to_the_stages():
    """The carried settings' ranges held at the front door and are not checked again; the one check
    the worker makes is each stage's of its own arguments, when the chain is built."""
    carried = SamplingParams.from_json({"temperature": 2.5})
    with pytest.raises(ParamError) as caught:
        SamplerChain(carried)
    assert caught.value.param == "temperature"


def test_field_names_split_a_flat_dict():
    flat = {"temperature": 0.5, "max_tokens": 10, "stop": ["\n"]}
    names = SamplingParams.field_names()
    assert {k for k in flat if k in names} == {"temperature"}
    assert {"seed", "sampler_order", "dry_sequence_breakers"} <= names
    assert "penalize_prompt" not in names  # a stopping-loop parameter: the loop builds `history`


def test_params_are_frozen():
    with pytest.raises(AttributeError):
        SamplingParams().temperature = 0.5  # type: ignore[misc]


def test_every_field_is_off_by_default():
    assert SamplingParams().enabled_stages() == ()
