"""Stages that look for repeated sequences in the history: DRY and no-repeat n-gram."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from inference.sampling.candidates import Candidates
from inference.sampling.stages.base import Stage, StepContext
from inference.sampling.stages.declaration import Declaration, ParamIs
from inference.sampling.stages.fields import Integer, Number, Strings, require

if TYPE_CHECKING:  # (type hints only: params.py reads the declarations)
    from inference.sampling.params import SamplingParams

DRY_MULTIPLIER = Number(
    "dry_multiplier",
    0.0,
    "0 = off",
    low=0.0,
    label="DRY multiplier",
    about="Don't Repeat Yourself: penalize the token that would extend a repeated sequence.",
    definition="DRY (llama.cpp): see below.",
)
DRY_BASE = Number(
    "dry_base",
    1.75,
    "default 1.75",
    low=1.0,
    label="DRY base",
    about="The penalty grows as base^(repeat length − allowed length).",
    definition="DRY's exponential base.",
)
DRY_ALLOWED_LENGTH = Integer(
    "dry_allowed_length",
    2,
    "default 2",
    low=1,
    label="DRY allowed length",
    about="Repeats shorter than this are free.",
    definition="repeats shorter than this are free.",
)
DRY_PENALTY_LAST_N = Integer(
    "dry_penalty_last_n",
    -1,
    "-1 = the whole history, 0 = off",
    low=-1,
    label="DRY window",
    about="How far back DRY looks for repeats.",
    definition="DRY's window.",
)
#: llama.cpp's default DRY sequence breakers.
DRY_SEQUENCE_BREAKERS = Strings(
    "dry_sequence_breakers",
    ("\n", ":", '"', "*"),
    "default: newline, colon, quote, asterisk",
    max_items=32,
    item_length=(1, 64),
    label="DRY sequence breakers",
    about="A repeat never reaches back past a token containing one of these.",
    definition="tokens whose text contains one of these stop a repeat.",
)
NO_REPEAT_NGRAM_SIZE = Integer(
    "no_repeat_ngram_size",
    0,
    "0 = off",
    low=0,
    label="No-repeat n-gram size",
    about="Forbid any token that would complete an n-gram already in the text.",
    definition="Hugging Face: remove every token that would complete an n-gram (n = size) already in the history.",
)

# llama.cpp clamps DRY's exponent so that base**exponent stays below FLT_MAX: log(FLT_MAX).
_FLT_MAX_LOG = 88.7228391


class Dry(Stage):
    """DRY, "don't repeat yourself" (p-e-w; llama.cpp's definition).

    Let n be the length of the longest suffix of the (windowed) history that also occurs earlier,
    immediately followed by token t. If n >= allowed_length, t's logit -= multiplier *
    base ** (n - allowed_length) (exponent clamped as llama.cpp does). A match never reaches back
    past the last sequence-breaker token, and breaker tokens themselves are never penalized.
    ``breaker_ids`` are the token ids whose text contains a breaker string (``breaker_ids_for``).
    """

    name = "dry"

    def __init__(self, multiplier: float, base: float, allowed_length: int, last_n: int, breaker_ids: Iterable[int] = ()) -> None:
        self.multiplier, self.base = DRY_MULTIPLIER.check(multiplier), DRY_BASE.check(base)
        self.allowed_length, self.last_n = DRY_ALLOWED_LENGTH.check(allowed_length), DRY_PENALTY_LAST_N.check(last_n)
        self._breakers = np.array(sorted(set(breaker_ids)), dtype=np.int64)
        self._max_exponent = int(_FLT_MAX_LOG / math.log(base)) if base > 1.000001 else 0
        # Beyond this match length the (clamped) penalty no longer grows.
        if self._max_exponent > 0:
            self._max_len = allowed_length + self._max_exponent
        else:
            self._max_len = allowed_length if base == 1 else 2**62

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        h = ctx.history if self.last_n == -1 else ctx.history[-self.last_n :]
        n = len(h)
        if n <= self.allowed_length:
            return cand
        breaks = np.flatnonzero(np.isin(h, self._breakers)) if len(self._breakers) else ()
        limit = n - 1 - int(breaks[-1]) if len(breaks) else n  # tokens after the last breaker
        if limit < self.allowed_length:
            return cand
        # match[j]: length of the common suffix of h[: j + 1] and h, for each earlier end j.
        match = np.zeros(n - 1, dtype=np.int64)
        live = np.arange(n - 1)
        for t in range(min(limit, self._max_len)):
            live = live[live >= t]
            live = live[h[live - t] == h[n - 1 - t]]
            if not len(live):
                break
            match[live] = t + 1
        ends = np.flatnonzero(match >= self.allowed_length)
        if not len(ends):
            return cand
        followers, lengths = h[ends + 1], match[ends]
        order = np.lexsort((lengths, followers))  # per follower, its longest match last
        followers, lengths = followers[order], lengths[order]
        last = np.r_[followers[1:] != followers[:-1], True]
        tokens, longest = followers[last], lengths[last]
        keep = ~np.isin(tokens, self._breakers)
        tokens, longest = tokens[keep], longest[keep]
        exponent = longest - self.allowed_length
        if self._max_exponent > 0:
            exponent = np.minimum(exponent, self._max_exponent)
        pos, hit = cand.positions(tokens)
        return cand.shifted(pos, cand.logits_at(pos) - self.multiplier * np.power(self.base, exponent[hit].astype(np.float64)))


def breaker_ids_for(token_texts, breakers: Iterable[str]) -> frozenset[int]:
    """Ids of the tokens whose decoded text contains any of the breaker strings."""
    breakers = tuple(breakers)
    return frozenset(i for i, text in enumerate(token_texts) if any(b in text for b in breakers))


class NoRepeatNgram(Stage):
    """Hugging Face's no_repeat_ngram_size: remove every token that would complete an n-gram
    already present in the history (n = size; n = 1 removes every token of the history)."""

    name = "no_repeat_ngram"

    def __init__(self, size: int) -> None:
        self.size = NO_REPEAT_NGRAM_SIZE.check(size)
        require(size >= 1, "no_repeat_ngram_size", "no_repeat_ngram_size must be >= 1 (0 = off)")

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        h, n = ctx.history, self.size
        if len(h) < n:  # no n-gram in the history yet
            return cand
        grams = sliding_window_view(h, n)
        prefix = h[len(h) - n + 1 :]
        banned = grams[(grams[:, :-1] == prefix).all(axis=1), -1]
        if not len(banned):
            return cand
        pos, _ = cand.positions(np.unique(banned))
        mask = np.ones(len(cand), dtype=bool)
        mask[pos] = False
        return cand.keep(mask)


def _dry(p: SamplingParams, token_texts: Sequence[str] | None) -> Dry:
    breakers = breaker_ids_for(token_texts, p.dry_sequence_breakers) if token_texts is not None else ()
    return Dry(p.dry_multiplier, p.dry_base, p.dry_allowed_length, p.dry_penalty_last_n, breakers)


DRY_STAGE = Declaration(
    Dry,
    "penalize tokens that would extend a repeated sequence",
    params=(DRY_MULTIPLIER, DRY_BASE, DRY_ALLOWED_LENGTH, DRY_PENALTY_LAST_N, DRY_SEQUENCE_BREAKERS),
    on=(ParamIs("dry_multiplier", ">", 0.0), ParamIs("dry_penalty_last_n", "!=", 0)),
    builder=_dry,
    title="Don't repeat yourself (DRY)",
    group="penalties",
)
NO_REPEAT_NGRAM_STAGE = Declaration(
    NoRepeatNgram,
    "remove tokens that would repeat an n-gram",
    params=(NO_REPEAT_NGRAM_SIZE,),
    on=(ParamIs("no_repeat_ngram_size", ">", 0),),
    title="No-repeat n-gram",
    group="penalties",
)
