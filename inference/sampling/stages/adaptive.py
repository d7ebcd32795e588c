"""Stages with state across tokens: XTC (its own random stream) and mirostat v2 (its mu)."""

from __future__ import annotations

import math

import numpy as np

from inference.sampling.candidates import Candidates
from inference.sampling.stages.base import Stage, StepContext
from inference.sampling.stages.penalties import require

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
        require(0 <= probability <= 1, "xtc_probability", "xtc_probability must be in [0, 1]")
        require(0 <= threshold <= 1, "xtc_threshold", "xtc_threshold must be in [0, 1]")
        self.probability, self.threshold, self.seed = probability, threshold, seed
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
        order = above[np.argsort(-p[above], kind="stable")]
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
        require(tau > 0, "mirostat_tau", "mirostat_tau must be > 0")
        require(0 <= eta <= 1, "mirostat_eta", "mirostat_eta must be in [0, 1]")
        self.tau, self.eta = tau, eta
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
