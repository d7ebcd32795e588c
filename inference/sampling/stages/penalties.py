"""Stages that shift the logits of particular tokens: logit bias and the three history penalties."""

from __future__ import annotations

import types
from collections.abc import Mapping

import numpy as np

from inference.errors import ParamError
from inference.sampling.candidates import Candidates
from inference.sampling.stages.base import Stage, StepContext
from inference.sampling.stages.declaration import Declaration, ParamIs
from inference.sampling.stages.fields import Integer, Number, TokenBias

LOGIT_BIAS = TokenBias(
    "logit_bias",
    types.MappingProxyType({}),
    "{} = off",
    low=-100.0,
    high=100.0,
    label="Logit bias",
    about="Add a number to chosen tokens' logits before every other stage but a grammar.",
    definition="`logit[id] += bias`. Ids must be < V: checked when applied, or up front with `params.validate_for_vocab(V)`.",
)
REPETITION_PENALTY = Number(
    "repetition_penalty",
    1.0,
    "1 = off",
    low=0.0,
    low_open=True,
    label="Repetition penalty",
    about="Divides a seen token's positive logit (multiplies a negative one), however often it appeared.",
    definition="CTRL (Keskar et al.): for each *distinct* token of the windowed history, a logit > 0 is divided by the penalty, a logit <= 0 multiplied by it.",
)
FREQUENCY_PENALTY = Number(
    "frequency_penalty",
    0.0,
    "0 = off",
    low=-2.0,
    high=2.0,
    label="Frequency penalty",
    about="Subtracts value × how many times the token appeared.",
    definition="OpenAI: `logit -= count × value`, count = occurrences in the windowed history.",
)
PRESENCE_PENALTY = Number(
    "presence_penalty",
    0.0,
    "0 = off",
    low=-2.0,
    high=2.0,
    label="Presence penalty",
    about="Subtracts value once from every token that appeared at all.",
    definition="OpenAI: `logit -= value` if count > 0.",
)
PENALTY_WINDOW = Integer(
    "penalty_window",
    0,
    "0 = the whole history",
    low=0,
    label="Penalty window",
    about="The three penalties above only count the last N tokens.",
    definition="the three penalties (`repetition_penalty`, `frequency_penalty`, `presence_penalty`) only count the last N history tokens.",
)


class LogitBias(Stage):
    """logit[id] += bias for each entry (OpenAI's ``logit_bias``); ids must be < vocab size."""

    name = "logit_bias"

    def __init__(self, bias: Mapping[int, float]) -> None:
        self.bias = dict(LOGIT_BIAS.check(bias))
        self._ids = np.fromiter(self.bias.keys(), dtype=np.int64, count=len(self.bias))
        self._values = np.fromiter(self.bias.values(), dtype=np.float64, count=len(self.bias))

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        if len(self._ids) and self._ids.max() >= cand.vocab_size:
            bad = int(self._ids[self._ids >= cand.vocab_size][0])
            raise ParamError(f"logit_bias.{bad}", f"logit_bias token id must be in [0, {cand.vocab_size - 1}]; got {bad}")
        pos, hit = cand.positions(self._ids)
        return cand.shifted(pos, cand.logits_at(pos) + self._values[hit])


class HistoryPenalty(Stage):
    """A stage that moves the logits of the tokens seen in the last ``window`` tokens of the history
    (0 = all of it); subclasses say how, from the seen logits and their counts."""

    def __init__(self, penalty: float, window: int = 0) -> None:
        self.penalty = penalty
        self.window = PENALTY_WINDOW.check(window)

    def adjust(self, seen: np.ndarray, counts: np.ndarray) -> np.ndarray:  # both [K]
        raise NotImplementedError

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        tokens, counts = ctx.counts(self.window)
        pos, hit = cand.positions(tokens)
        return cand.shifted(pos, self.adjust(cand.logits_at(pos), counts[hit]))


class RepetitionPenalty(HistoryPenalty):
    """CTRL (Keskar et al.): for each distinct token of the (windowed) history, a positive logit is
    divided by the penalty and a negative one multiplied by it."""

    name = "repetition_penalty"

    def __init__(self, penalty: float, window: int = 0) -> None:
        super().__init__(REPETITION_PENALTY.check(penalty), window)

    def adjust(self, seen: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return np.where(seen > 0, seen / self.penalty, seen * self.penalty)


class FrequencyPenalty(HistoryPenalty):
    """OpenAI: logit -= count x penalty, count = occurrences in the (windowed) history."""

    name = "frequency_penalty"

    def __init__(self, penalty: float, window: int = 0) -> None:
        super().__init__(FREQUENCY_PENALTY.check(penalty), window)

    def adjust(self, seen: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return seen - counts * self.penalty


class PresencePenalty(HistoryPenalty):
    """OpenAI: logit -= penalty for every token that occurs in the (windowed) history."""

    name = "presence_penalty"

    def __init__(self, penalty: float, window: int = 0) -> None:
        super().__init__(PRESENCE_PENALTY.check(penalty), window)

    def adjust(self, seen: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return seen - self.penalty


LOGIT_BIAS_STAGE = Declaration(
    LogitBias, "logit += bias[id]", params=(LOGIT_BIAS,), on=(ParamIs("logit_bias", "nonempty"),), title="Logit bias", group=None
)
REPETITION_PENALTY_STAGE = Declaration(
    RepetitionPenalty,
    "CTRL: a seen token's logit / penalty if > 0, x penalty if <= 0",
    params=(REPETITION_PENALTY, PENALTY_WINDOW),
    on=(ParamIs("repetition_penalty", "!=", 1.0),),
    title="Repetition penalty",
    group="penalties",
)
FREQUENCY_PENALTY_STAGE = Declaration(
    FrequencyPenalty,
    "logit -= count x value",
    params=(FREQUENCY_PENALTY, PENALTY_WINDOW),
    on=(ParamIs("frequency_penalty", "!=", 0.0),),
    title="Frequency penalty",
    group="penalties",
)
PRESENCE_PENALTY_STAGE = Declaration(
    PresencePenalty,
    "logit -= value if count > 0",
    params=(PRESENCE_PENALTY, PENALTY_WINDOW),
    on=(ParamIs("presence_penalty", "!=", 0.0),),
    title="Presence penalty",
    group="penalties",
)
