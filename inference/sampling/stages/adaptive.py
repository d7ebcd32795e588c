"""Stages with state across tokens: XTC (its own random stream) and mirostat v2 (its mu)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from inference.errors import ParamError
from inference.sampling.candidates import Candidates
from inference.sampling.order import stable_argsort
from inference.sampling.stages.base import Stage, StepContext
from inference.sampling.stages.declaration import Declaration, ParamIs
from inference.sampling.stages.fields import Choice, Number

if TYPE_CHECKING:  # (type hints only: params.py reads the declarations)
    from inference.sampling.params import SamplingParams

XTC_PROBABILITY = Number(
    "xtc_probability",
    0.0,
    "0 = off",
    low=0.0,
    high=1.0,
    label="XTC probability",
    about="Exclude Top Choices: with this chance per token, drop every top token above the threshold but the least likely.",
    definition="XTC (llama.cpp): see below.",
)
XTC_THRESHOLD = Number(
    "xtc_threshold",
    0.1,
    "default 0.1",
    low=0.0,
    high=1.0,
    label="XTC threshold",
    about="Tokens at or above this probability count as top choices (above 0.5 XTC can never act).",
    definition="XTC's threshold (above 0.5 it can never act: at most one token can reach it).",
)
MIROSTAT = Choice(
    "mirostat",
    0,
    "0 = off, 2 = mirostat v2",
    choices=(0, 2),
    words="0 (off) or 2 (mirostat v2)",
    label="Mirostat",
    about="Adapts a surprise cutoff each step to hold the text's average surprise near τ.",
    definition="2 turns on mirostat v2 (mirostat 1 is not offered).",
)
MIROSTAT_TAU = Number(
    "mirostat_tau",
    5.0,
    "default 5",
    low=0.0,
    low_open=True,
    label="Mirostat τ",
    about="Target surprise in bits.",
    definition="target surprise in bits.",
)
MIROSTAT_ETA = Number(
    "mirostat_eta",
    0.1,
    "default 0.1",
    low=0.0,
    high=1.0,
    label="Mirostat η",
    about="How fast mirostat's cutoff follows the target.",
    definition="learning rate.",
)

#: XTC's stream is numpy.random.default_rng([seed, XTC_STREAM]) ("XTC" in ASCII).
XTC_STREAM = 0x585443


class Xtc(Stage):
    """Exclude Top Choices (llama.cpp's definition). Each token, a coin c is drawn from XTC's own
    stream; if c <= probability and at least two tokens have probability >= threshold, all of
    those are removed except the least likely one (in the order probability descending, ties
    lower id first: the last of them). One coin per generated token, whether or not it is used,
    so the stream stays aligned; ``distribution`` and ``trace`` use the pending coin without
    drawing, ``accept`` draws the next."""

    name = "xtc"

    def __init__(self, probability: float, threshold: float, seed: int) -> None:
        self.probability, self.threshold = XTC_PROBABILITY.check(probability), XTC_THRESHOLD.check(threshold)
        self.seed = seed
        self.reset()

    def reset(self) -> None:
        self._stream = np.random.default_rng([self.seed, XTC_STREAM])
        self.coin = float(self._stream.random())

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        if self.coin > self.probability or len(cand) < 2:
            return cand
        p = cand.softmax.p
        above = np.flatnonzero(p >= self.threshold)
        if len(above) < 2:
            return cand
        order = above[stable_argsort(-p[above])]
        mask = np.ones(len(cand), dtype=bool)
        mask[order[:-1]] = False
        return cand.keep(mask)

    def accept(self, token: int, out: Candidates) -> None:
        self.coin = float(self._stream.random())


class MirostatV2(Stage):
    """Mirostat 2 (Basu et al.; llama.cpp's definition). Keep the tokens whose surprise -log2 p is
    <= mu (at least the top one); after the pick, with p the chosen token's probability in this
    stage's output, mu -= eta x (-log2 p - tau). mu starts at 2 x tau."""

    name = "mirostat"

    def __init__(self, tau: float, eta: float) -> None:
        self.tau, self.eta = MIROSTAT_TAU.check(tau), MIROSTAT_ETA.check(eta)
        self.reset()

    def reset(self) -> None:
        self.mu = 2.0 * self.tau

    @staticmethod
    def surprise(cand: Candidates) -> np.ndarray:
        """-log2 p of each candidate, from logits so that it stays finite."""
        soft = cand.softmax
        return (soft.log_z - soft.d) / math.log(2)

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        return cand.keep(self.surprise(cand) <= self.mu)

    def accept(self, token: int, out: Candidates) -> None:
        pos = out.position(token)
        if pos is not None:
            self.mu -= self.eta * (float(self.surprise(out)[pos]) - self.tau)


def _xtc(p: SamplingParams, token_texts: Sequence[str] | None) -> Xtc:
    if p.seed is None:
        raise ParamError("seed", "xtc draws random numbers: give a seed (integer in [0, 2^63-1])", "missing_field")
    return Xtc(p.xtc_probability, p.xtc_threshold, p.seed)


XTC_STAGE = Declaration(
    Xtc,
    "sometimes remove all top choices but the least likely of them (needs a seed)",
    params=(XTC_PROBABILITY, XTC_THRESHOLD),
    on=(ParamIs("xtc_probability", ">", 0.0),),
    builder=_xtc,
    title="Exclude top choices (XTC)",
    group="truncation",
)
MIROSTAT_STAGE = Declaration(
    MirostatV2,
    "mirostat v2: keep surprise <= mu, then adapt mu to the target tau",
    params=(MIROSTAT_TAU, MIROSTAT_ETA),
    on=(ParamIs("mirostat", "==", 2),),
    switches=(MIROSTAT,),
    title="Mirostat v2",
    group="truncation",
)
