"""Temperature and dynamic (entropy-scaled) temperature."""

from __future__ import annotations

import math

import numpy as np

from inference.sampling.candidates import Candidates
from inference.sampling.stages.base import Stage, StepContext
from inference.sampling.stages.penalties import require


def _only_top(cand: Candidates) -> Candidates:
    """One-hot on the highest logit, the lowest id among ties (np.argmax takes the first)."""
    return cand.keep_positions(np.array([int(np.argmax(cand.logits))]))


class Temperature(Stage):
    """logit / T. T = 0 is greedy: only the highest logit stays (ties: lowest id), and the chain
    runs no stage after this one."""

    name = "temperature"

    def __init__(self, temperature: float) -> None:
        require(0 <= temperature <= 2, "temperature", "temperature must be in [0, 2]")
        self.temperature = temperature

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
        require(0 < temperature <= 2, "temperature", "dynamic temperature needs temperature in (0, 2]")
        require(range_ >= 0, "dynatemp_range", "dynatemp_range must be >= 0")
        require(exponent >= 0, "dynatemp_exponent", "dynatemp_exponent must be >= 0")
        self.temperature, self.range, self.exponent = temperature, range_, exponent
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
