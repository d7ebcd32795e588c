"""The stages, one small class each, and ``build_stages``: the chain's list for given params."""

from __future__ import annotations

from collections.abc import Sequence

from inference.errors import ParamError
from inference.sampling.params import SamplingParams
from inference.sampling.stages.adaptive import XTC_STREAM, MirostatV2, Xtc
from inference.sampling.stages.base import Stage, StepContext
from inference.sampling.stages.penalties import FrequencyPenalty, LogitBias, PresencePenalty, RepetitionPenalty
from inference.sampling.stages.repeats import Dry, NoRepeatNgram, breaker_ids_for
from inference.sampling.stages.temperature import DynamicTemperature, Temperature
from inference.sampling.stages.truncation import EpsilonCutoff, EtaCutoff, MinP, TopK, TopNSigma, TopP, TypicalP

__all__ = [
    "Stage",
    "StepContext",
    "build_stages",
    "XTC_STREAM",
    "breaker_ids_for",
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


def _xtc(p: SamplingParams, token_texts) -> Xtc:
    if p.seed is None:
        raise ParamError("seed", "xtc draws random numbers: give a seed (integer in [0, 2^63-1])", "missing_field")
    return Xtc(p.xtc_probability, p.xtc_threshold, p.seed)


def _dry(p: SamplingParams, token_texts) -> Dry:
    breakers = breaker_ids_for(token_texts, p.dry_sequence_breakers) if token_texts is not None else ()
    return Dry(p.dry_multiplier, p.dry_base, p.dry_allowed_length, p.dry_penalty_last_n, breakers)


_BUILDERS = {
    "logit_bias": lambda p, _: LogitBias(p.logit_bias),
    "repetition_penalty": lambda p, _: RepetitionPenalty(p.repetition_penalty, p.penalty_window),
    "frequency_penalty": lambda p, _: FrequencyPenalty(p.frequency_penalty, p.penalty_window),
    "presence_penalty": lambda p, _: PresencePenalty(p.presence_penalty, p.penalty_window),
    "dry": _dry,
    "no_repeat_ngram": lambda p, _: NoRepeatNgram(p.no_repeat_ngram_size),
    "top_n_sigma": lambda p, _: TopNSigma(p.top_n_sigma),
    "temperature": lambda p, _: Temperature(p.temperature),
    "dynamic_temperature": lambda p, _: DynamicTemperature(p.temperature, p.dynatemp_range, p.dynatemp_exponent),
    "top_k": lambda p, _: TopK(p.top_k),
    "top_p": lambda p, _: TopP(p.top_p),
    "min_p": lambda p, _: MinP(p.min_p),
    "typical_p": lambda p, _: TypicalP(p.typical_p),
    "epsilon_cutoff": lambda p, _: EpsilonCutoff(p.epsilon_cutoff),
    "eta_cutoff": lambda p, _: EtaCutoff(p.eta_cutoff),
    "xtc": _xtc,
    "mirostat": lambda p, _: MirostatV2(p.mirostat_tau, p.mirostat_eta),
}


def build_stages(params: SamplingParams, token_texts: Sequence[str] | None = None) -> list[Stage]:
    """One stage per enabled name, in ``params.sampler_order``; none after greedy temperature."""
    return [_BUILDERS[name](params, token_texts) for name in params.enabled_stages()]
