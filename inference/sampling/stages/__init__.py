"""The stages, one small class each with its declaration beside it, and ``STAGES``: every
declaration in the default order. Everything else that lists stages reads ``STAGES``."""

from __future__ import annotations

from collections.abc import Sequence

from inference.sampling.stages.adaptive import MIROSTAT_STAGE, XTC_STAGE, XTC_STREAM, MirostatV2, Xtc
from inference.sampling.stages.base import Stage, StepContext
from inference.sampling.stages.declaration import Declaration, Values
from inference.sampling.stages.fields import Field
from inference.sampling.stages.grammar import GRAMMAR_STAGE, Grammar, GrammarVocabulary
from inference.sampling.stages.penalties import (
    FREQUENCY_PENALTY_STAGE,
    LOGIT_BIAS_STAGE,
    PRESENCE_PENALTY_STAGE,
    REPETITION_PENALTY_STAGE,
    FrequencyPenalty,
    LogitBias,
    PresencePenalty,
    RepetitionPenalty,
)
from inference.sampling.stages.repeats import DRY_STAGE, NO_REPEAT_NGRAM_STAGE, Dry, NoRepeatNgram, breaker_ids_for
from inference.sampling.stages.temperature import DYNAMIC_TEMPERATURE_STAGE, TEMPERATURE_STAGE, DynamicTemperature, Temperature
from inference.sampling.stages.truncation import (
    EPSILON_CUTOFF_STAGE,
    ETA_CUTOFF_STAGE,
    MIN_P_STAGE,
    TOP_K_STAGE,
    TOP_N_SIGMA_STAGE,
    TOP_P_STAGE,
    TYPICAL_P_STAGE,
    EpsilonCutoff,
    EtaCutoff,
    MinP,
    TopK,
    TopNSigma,
    TopP,
    TypicalP,
)

__all__ = [
    "STAGES",
    "STAGE_BY_NAME",
    "stage_fields",
    "Declaration",
    "Stage",
    "StepContext",
    "enabled_names",
    "XTC_STREAM",
    "breaker_ids_for",
    "Grammar",
    "GrammarVocabulary",
    "LogitBias",
    "RepetitionPenalty",
    "FrequencyPenalty",
    "PresencePenalty",
    "Dry",
    "NoRepeatNgram",
    "TopNSigma",
    "Temperature",
    "DynamicTemperature",
    "TopK",
    "TopP",
    "MinP",
    "TypicalP",
    "EpsilonCutoff",
    "EtaCutoff",
    "Xtc",
    "MirostatV2",
]

#: Every stage, in the default order (why this order: the package docstring).
STAGES: tuple[Declaration, ...] = (
    GRAMMAR_STAGE,
    LOGIT_BIAS_STAGE,
    REPETITION_PENALTY_STAGE,
    FREQUENCY_PENALTY_STAGE,
    PRESENCE_PENALTY_STAGE,
    DRY_STAGE,
    NO_REPEAT_NGRAM_STAGE,
    TOP_N_SIGMA_STAGE,
    TEMPERATURE_STAGE,
    DYNAMIC_TEMPERATURE_STAGE,
    TOP_K_STAGE,
    TOP_P_STAGE,
    MIN_P_STAGE,
    TYPICAL_P_STAGE,
    EPSILON_CUTOFF_STAGE,
    ETA_CUTOFF_STAGE,
    XTC_STAGE,
    MIROSTAT_STAGE,
)

STAGE_BY_NAME: dict[str, Declaration] = {stage.name: stage for stage in STAGES}


def stage_fields(stages: Sequence[Declaration] = STAGES) -> dict[str, Field]:
    """Every field the stages declare, by name, in the order first declared. A field two stages
    read (``temperature``, ``penalty_window``) is one object, declared once."""
    fields: dict[str, Field] = {}
    for stage in stages:
        for f in stage.fields:
            if fields.setdefault(f.name, f) is not f:
                raise TypeError(f"the field {f.name!r} is declared twice ({stage.name}): declare it once and share it")
    return fields


def enabled_names(values: Values, order: Sequence[str], stop_at_end: bool = True) -> tuple[str, ...]:
    """The names in ``order`` whose stage's on-rule holds for ``values``; with ``stop_at_end``, none
    after a stage whose ``ends_chain`` holds (greedy temperature)."""
    out: list[str] = []
    for name in order:
        stage = STAGE_BY_NAME[name]
        if stage.is_on(values):
            out.append(name)
            if stop_at_end and stage.ends_chain is not None and stage.ends_chain.holds(values):
                break
    return tuple(out)
