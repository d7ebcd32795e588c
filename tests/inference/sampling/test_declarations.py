"""The stage declarations: the one place a stage's name, fields, on-rule and builder are written, and
what is read from them (the order, the fields' ranges and defaults, the on/off rule, the docs)."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest

import inference.sampling
from inference.errors import ParamError
from inference.sampling import DEFAULT_ORDER, STAGES, SamplerChain, SamplingParams
from inference.sampling.params import FIELDS
from inference.sampling.stage_table import PACKAGE_SOURCE, list_in, stage_list, stage_table, table_in
from inference.sampling.stages import STAGE_BY_NAME, stage_fields
from inference.sampling.stages.declaration import Declaration, ParamIs, StageIs
from inference.sampling.stages.fields import Number
from inference.sampling.stages.penalties import FrequencyPenalty, LogitBias, RepetitionPenalty
from inference.sampling.stages.repeats import Dry, NoRepeatNgram
from inference.sampling.stages.temperature import DynamicTemperature, Temperature
from inference.sampling.stages.truncation import EpsilonCutoff, TopK, TopNSigma, TopP

from .helpers import HandVocab

DOC = Path(__file__).resolve().parents[3] / "docs" / "sampling.md"

# Every stage on, at once (xtc needs a seed).
EVERY_STAGE = {
    "grammar": {"type": "regex", "pattern": "[ab]+"},
    "logit_bias": {"1": -5},
    "repetition_penalty": 1.1,
    "frequency_penalty": 0.2,
    "presence_penalty": -0.2,
    "dry_multiplier": 1.0,
    "no_repeat_ngram_size": 3,
    "top_n_sigma": 2.0,
    "temperature": 1.3,
    "top_k": 40,
    "top_p": 0.95,
    "min_p": 0.05,
    "typical_p": 0.9,
    "epsilon_cutoff": 0.001,
    "eta_cutoff": 0.001,
    "xtc_probability": 0.5,
    "mirostat": 2,
    "seed": 1,
}


def test_the_order_is_the_declarations_order_and_names_are_the_classes():
    assert tuple(stage.name for stage in STAGES) == DEFAULT_ORDER
    assert len(set(DEFAULT_ORDER)) == len(DEFAULT_ORDER)
    assert list(STAGE_BY_NAME) == list(DEFAULT_ORDER)
    for stage in STAGES:
        assert stage.name == stage.stage.name and stage.does and stage.on


def test_every_field_is_declared_once_and_is_a_samplingparams_field():
    assert set(FIELDS) | {"sampler_order"} == SamplingParams.field_names()
    defaults = SamplingParams()
    for name, f in FIELDS.items():
        assert getattr(defaults, name) == f.check(f.default), name
    # A field two stages read is one object: temperature (and dynamic temperature), penalty_window.
    assert STAGE_BY_NAME["temperature"].params[0] is STAGE_BY_NAME["dynamic_temperature"].params[0]
    windows = {id(f) for s in STAGES for f in s.params if f.name == "penalty_window"}
    assert len(windows) == 1


def test_a_field_declared_twice_is_refused():
    again = Number("top_p", 1.0, "1 = off", low=0.0, low_open=True, high=1.0)
    twice = Declaration(TopP, "again", params=(again,), on=(ParamIs("top_p", "<", 1.0),))
    with pytest.raises(TypeError, match="top_p"):
        stage_fields((*STAGES, twice))


def test_every_clause_names_a_field_or_a_stage():
    for stage in STAGES:
        clauses = [*stage.on, *([stage.ends_chain] if stage.ends_chain else [])]
        for clause in clauses:
            if isinstance(clause, ParamIs):
                assert clause.param in FIELDS, (stage.name, clause)
            else:
                assert isinstance(clause, StageIs) and clause.other is STAGE_BY_NAME[clause.stage]
                assert clause.stage != stage.name
    assert [stage.name for stage in STAGES if stage.ends_chain] == ["temperature"]


def test_a_stage_without_a_builder_takes_its_fields_values_in_their_declared_order():
    """The default build is ``stage(*values)``: the class's parameters are the declared fields."""
    without = [stage for stage in STAGES if stage.builder is None]
    assert len(without) >= 12
    for stage in without:
        arguments = list(inspect.signature(stage.stage.__init__).parameters)[1:]
        assert len(arguments) == len(stage.params), stage.name
    built = STAGE_BY_NAME["repetition_penalty"].build(SamplingParams(repetition_penalty=1.3, penalty_window=7))
    assert (built.penalty, built.window) == (1.3, 7)


def test_the_on_rule_reads_plain_values_without_samplingparams():
    """The declarations read any object with the fields as attributes: no run-time lean on params.py."""
    values = SimpleNamespace(**{name: f.default for name, f in FIELDS.items()})
    assert not any(stage.is_on(values) for stage in STAGES)
    values.temperature, values.dynatemp_range = 0.7, 0.5
    assert STAGE_BY_NAME["dynamic_temperature"].is_on(values) and not STAGE_BY_NAME["temperature"].is_on(values)
    values.dynatemp_range = 0.0
    assert STAGE_BY_NAME["temperature"].is_on(values)


def test_each_builder_builds_its_declared_class_in_the_order():
    params = SamplingParams.from_dict(EVERY_STAGE)
    built = SamplerChain(params, HandVocab()).stages
    names = [stage.name for stage in built]
    assert names == [n for n in DEFAULT_ORDER if n != "dynamic_temperature"]
    for stage in built:
        assert type(stage) is STAGE_BY_NAME[stage.name].stage
    dynamic = SamplerChain(SamplingParams.from_dict({**EVERY_STAGE, "dynatemp_range": 0.5}), HandVocab()).stages
    assert type(dynamic[names.index("temperature")]) is DynamicTemperature


@pytest.mark.parametrize("name", DEFAULT_ORDER)
def test_the_on_rule_is_what_stage_enabled_says(name):
    """Off at the defaults; on with the everything-on values (temperature: unless dynamic)."""
    assert not SamplingParams().stage_enabled(name)
    every = SamplingParams.from_dict({**EVERY_STAGE, **({"dynatemp_range": 0.5} if name == "dynamic_temperature" else {})})
    assert every.stage_enabled(name) == STAGE_BY_NAME[name].is_on(every) is True


# A stage checks its arguments with its declared fields: the same message as SamplingParams'.
OUT_OF_RANGE = [
    (lambda: Temperature(2.5), "temperature", 2.5),
    (lambda: TopP(0.0), "top_p", 0.0),
    (lambda: TopK(-1), "top_k", -1),
    (lambda: TopNSigma(-1.0), "top_n_sigma", -1.0),
    (lambda: EpsilonCutoff(1.0), "epsilon_cutoff", 1.0),
    (lambda: FrequencyPenalty(2.5), "frequency_penalty", 2.5),
    (lambda: RepetitionPenalty(0.0), "repetition_penalty", 0.0),
    (lambda: RepetitionPenalty(1.2, window=-1), "penalty_window", -1),
    (lambda: LogitBias({3: 101.0}), "logit_bias", {3: 101.0}),
    (lambda: Dry(1.0, 0.5, 2, -1), "dry_base", 0.5),
    (lambda: NoRepeatNgram(-2), "no_repeat_ngram_size", -2),
    (lambda: DynamicTemperature(0.8, 2.5, 1.0), "dynatemp_range", 2.5),
]


@pytest.mark.parametrize("build, field, value", OUT_OF_RANGE)
def test_a_stage_checks_its_arguments_with_its_declared_range(build, field, value):
    with pytest.raises(ParamError) as by_stage:
        build()
    with pytest.raises(ParamError) as by_params:
        SamplingParams.from_dict({field: value})
    assert (by_stage.value.param, by_stage.value.message) == (by_params.value.param, by_params.value.message)


def test_a_stage_refuses_its_off_value():
    """Off values are valid params but build no stage; built by hand, the stage says why not."""
    for build, field in [
        (lambda: TopK(0), "top_k"),
        (lambda: TopNSigma(0.0), "top_n_sigma"),
        (lambda: NoRepeatNgram(0), "no_repeat_ngram_size"),
    ]:
        with pytest.raises(ParamError) as err:
            build()
        assert err.value.param == field and "0 = off" in err.value.message


def test_field_facts_are_the_declarations():
    facts = SamplingParams.field_facts()
    assert list(facts) == [f.name for f in dataclasses.fields(SamplingParams)]
    for name, f in FIELDS.items():
        assert facts[name]["off"] == f.off and facts[name]["nullable"] == f.nullable
        assert {k: facts[name][k] for k in f.facts()} == f.facts()
    assert facts["sampler_order"]["choices"] == DEFAULT_ORDER


# Made from the declarations: the package docstring's list and the docs' table.


def test_the_package_docstring_lists_the_declared_stages():
    """Written into the source (not filled in on import): a reader of the file sees the list."""
    assert list_in(PACKAGE_SOURCE.read_text()) == stage_list(), (
        "inference/sampling/__init__.py's stage list differs from the declarations: run "
        "`python -m inference.sampling.stages --write docs/sampling.md`"
    )
    assert stage_list() in inference.sampling.__doc__
    listed = [line.split()[1] for line in stage_list().splitlines()]
    assert listed == list(DEFAULT_ORDER)


def test_the_docs_stage_table_is_the_declarations():
    text = DOC.read_text()
    assert table_in(text) == stage_table(), (
        "docs/sampling.md's stage table differs from the declarations: run "
        "`python -m inference.sampling.stages --write docs/sampling.md`"
    )
    rows = [line for line in stage_table().splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split("|")[2].strip().strip("`") for row in rows] == list(DEFAULT_ORDER)
    assert (
        "| 9 | `temperature` | `temperature` != 1 and `dynamic_temperature` off; the chain ends here when `temperature` == 0 |"
        in stage_table()
    )


def test_a_changed_declaration_changes_the_table():
    """The doc check is not vacuous: other words, another rule or another order give another table."""
    top_p = STAGE_BY_NAME["top_p"]
    doc = table_in(DOC.read_text())
    for changed in (
        tuple(dataclasses.replace(s, does="something else") if s is top_p else s for s in STAGES),
        tuple(dataclasses.replace(s, on=(ParamIs("top_p", "<", 0.5),)) if s is top_p else s for s in STAGES),
        tuple(reversed(STAGES)),
    ):
        assert stage_table(changed) != doc
