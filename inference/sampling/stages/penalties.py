"""Stages that shift the logits of particular tokens: logit bias and the three history penalties."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from inference.errors import ParamError
from inference.sampling.candidates import Candidates
from inference.sampling.stages.base import Stage, StepContext


def require(ok: bool, param: str, message: str) -> None:
    """Stages re-check their constant parameters, so they can be built without SamplingParams."""
    if not ok:
        raise ParamError(param, message)


class LogitBias(Stage):
    """logit[id] += bias for each entry (OpenAI's ``logit_bias``); ids must be < vocab size."""

    name = "logit_bias"

    def __init__(self, bias: Mapping[int, float]) -> None:
        require(all(-100 <= b <= 100 for b in bias.values()), "logit_bias", "biases must be in [-100, 100]")
        self.bias = dict(bias)
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
        self.window = window

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
        require(penalty > 0, "repetition_penalty", "repetition_penalty must be > 0")
        super().__init__(penalty, window)

    def adjust(self, seen: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return np.where(seen > 0, seen / self.penalty, seen * self.penalty)


class FrequencyPenalty(HistoryPenalty):
    """OpenAI: logit -= count x penalty, count = occurrences in the (windowed) history."""

    name = "frequency_penalty"

    def __init__(self, penalty: float, window: int = 0) -> None:
        require(-2 <= penalty <= 2, "frequency_penalty", "frequency_penalty must be in [-2, 2]")
        super().__init__(penalty, window)

    def adjust(self, seen: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return seen - counts * self.penalty


class PresencePenalty(HistoryPenalty):
    """OpenAI: logit -= penalty for every token that occurs in the (windowed) history."""

    name = "presence_penalty"

    def __init__(self, penalty: float, window: int = 0) -> None:
        require(-2 <= penalty <= 2, "presence_penalty", "presence_penalty must be in [-2, 2]")
        super().__init__(penalty, window)

    def adjust(self, seen: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return seen - self.penalty
