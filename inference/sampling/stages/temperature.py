"""Temperature and dynamic (entropy-scaled) temperature."""

from __future__ import annotations

import math

import numpy as np

from inference.sampling.candidates import Candidates
from inference.sampling.stages.base import Stage, StepContext
from inference.sampling.stages.declaration import Declaration, ParamIs, StageIs
from inference.sampling.stages.fields import Number, require

TEMPERATURE = Number(
    "temperature",
    1.0,
    "1 = unchanged, 0 = greedy",
    low=0.0,
    high=2.0,
    label="Temperature",
    about="Divides the logits: below 1 sharpens the distribution, above 1 flattens it; 0 always takes the top token.",
    definition="`logit / T`. T = 0 is greedy (below).",
)
DYNATEMP_RANGE = Number(
    "dynatemp_range",
    0.0,
    "0 = off",
    low=0.0,
    high=2.0,
    label="Dynamic temperature range",
    about="Temperature varies within T ± range with the step's entropy: calm steps cooler, uncertain steps hotter.",
    definition="llama.cpp's entropy-scaled temperature (below); replaces the plain temperature stage.",
)
DYNATEMP_EXPONENT = Number(
    "dynatemp_exponent",
    1.0,
    "default 1",
    low=0.0,
    label="Dynamic temperature exponent",
    about="Shape of the entropy → temperature curve; only used when the range is above 0.",
    definition="its exponent.",
)


def _only_top(cand: Candidates) -> Candidates:
    """One-hot on the highest logit, the lowest id among ties (np.argmax takes the first; the
    values ordered like the logits: the model's float32 ones while no stage has moved them)."""
    return cand.keep_positions(np.array([int(np.argmax(cand.ordered_values))]))


class Temperature(Stage):
    """logit / T. T = 0 is greedy: only the highest logit stays (ties: lowest id), and the chain
    runs no stage after this one."""

    name = "temperature"

    def __init__(self, temperature: float) -> None:
        self.temperature = TEMPERATURE.check(temperature)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        if self.greedy:
            return _only_top(cand)
        return cand.with_logits(cand.logits / self.temperature)


class DynamicTemperature(Stage):
    """llama.cpp's entropy-scaled temperature (its temp_ext sampler), used instead of the plain
    temperature stage when dynatemp_range > 0.

    With n candidates and H the entropy of their distribution (nats):
    T_dyn = T_min + (T_max - T_min) * (H / ln n) ** exponent, T_min = max(0, T - range),
    T_max = T + range; logits are divided by T_dyn (T_dyn <= 0 keeps only the top token).
    Nothing changes when a single candidate is left.
    """

    name = "dynamic_temperature"

    def __init__(self, temperature: float, range_: float, exponent: float) -> None:
        self.temperature = TEMPERATURE.check(temperature)
        require(temperature > 0, "temperature", "dynamic temperature needs temperature > 0")
        self.range, self.exponent = DYNATEMP_RANGE.check(range_), DYNATEMP_EXPONENT.check(exponent)
        self.t_min = max(0.0, temperature - range_)
        self.t_max = temperature + range_

    def temperature_for(self, cand: Candidates) -> float:
        normalized = cand.softmax.entropy / math.log(len(cand))
        return self.t_min + (self.t_max - self.t_min) * normalized**self.exponent

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        if len(cand) <= 1:
            return cand
        t = self.temperature_for(cand)
        if t <= 0:
            return _only_top(cand)
        return cand.with_logits(cand.logits / t)


DYNAMIC_TEMPERATURE_STAGE = Declaration(
    DynamicTemperature,
    "entropy-scaled T, instead of temperature when dynatemp_range > 0",
    params=(TEMPERATURE, DYNATEMP_RANGE, DYNATEMP_EXPONENT),
    on=(ParamIs("dynatemp_range", ">", 0.0), ParamIs("temperature", ">", 0.0)),
    title="Dynamic temperature",
    group="randomness",
)
TEMPERATURE_STAGE = Declaration(
    Temperature,
    "logit / T (T = 0: one-hot on the top token)",
    params=(TEMPERATURE,),
    on=(ParamIs("temperature", "!=", 1.0), StageIs(DYNAMIC_TEMPERATURE_STAGE, on=False)),
    ends_chain=ParamIs("temperature", "==", 0.0),
    title="Temperature",
    group="randomness",
)
