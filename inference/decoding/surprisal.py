"""Prompt surprisal read off the prefill: how likely the model found each prompt token after the
ones before it, without a second pass.

A run that asks for it (``GenerationRequest.prompt_scores``) prefills with every position's logits
kept (``append_tokens(all_logits=True)``; the batched paths ask the decoder for all positions too),
and each chunk's logits [S, V] go to a ``SurprisalCollector``: the logits after position i are the
model's prediction of token i + 1. Position 0 has no prediction (nothing comes before it).

Per prompt token: its probability and log-probability (natural log), its rank among the whole
vocabulary (1 = the most likely; ties go to the lower id, as in ``inference.decoding.scoring``), the entropy
of the distribution it was drawn from (nats, as the token events' ``entropy``) and the ``top_n``
most likely tokens there. Over the prompt: the total surprisal in bits, −Σ log2 p, and the
perplexity, exp(−mean ln p), both over the tokens that have a prediction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Rows scored at once: each float64 work array is SCORE_BLOCK × V (12.6 MB at V = 49,152), so a
# 512-token prefill chunk never holds more than a few of them, whatever its length.
SCORE_BLOCK = 32


@dataclass(frozen=True)
class PromptToken:
    token_id: int
    logprob: float | None  # None for the first token: nothing comes before it
    rank: int | None  # 1: the most likely token at that position
    entropy: float | None  # nats
    top: tuple[tuple[int, float], ...]  # the most likely tokens there: (id, logprob), best first

    @property
    def prob(self) -> float | None:
        return None if self.logprob is None else math.exp(self.logprob)


@dataclass(frozen=True)
class PromptSurprisal:
    tokens: tuple[PromptToken, ...]

    @property
    def scored(self) -> int:
        """Tokens with a prediction (all but the first)."""
        return sum(1 for t in self.tokens if t.logprob is not None)

    @property
    def total_bits(self) -> float:
        return -sum(t.logprob for t in self.tokens if t.logprob is not None) / math.log(2)

    @property
    def perplexity(self) -> float | None:
        """exp of the mean negative log-probability; None for a one-token prompt."""
        if self.scored == 0:
            return None
        return math.exp(self.total_bits * math.log(2) / self.scored)


def score_rows(logits: np.ndarray, targets: Sequence[int], top_n: int) -> list[PromptToken]:
    """Each row of ``logits`` [S, V] as the prediction of the matching id of ``targets`` [S]."""
    rows = np.asarray(logits, dtype=np.float64)
    peak = rows.max(axis=-1, keepdims=True)
    shifted = rows - peak
    log_z = np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    log_probs = shifted - log_z  # [S, V]
    probs = np.exp(log_probs)
    entropies = -(probs * log_probs).sum(axis=-1)  # [S]
    out: list[PromptToken] = []
    for row, target, entropy in zip(log_probs, targets, entropies):
        mine = row[target]
        rank = int((row > mine).sum() + (row[:target] == mine).sum()) + 1  # ties: the lower id ranks first
        top_n_here = min(top_n, row.shape[0])
        candidates = np.argpartition(-row, top_n_here - 1)[:top_n_here] if top_n_here > 0 else np.array([], dtype=np.int64)
        best = sorted(candidates.tolist(), key=lambda i: (-row[i], i))
        top = tuple((int(i), float(row[i])) for i in best)
        out.append(PromptToken(int(target), float(mine), rank, max(0.0, float(entropy)), top))
    return out


class SurprisalCollector:
    """Gathers a prompt's surprisal chunk by chunk as the prefill feeds it; see the module's docstring."""

    def __init__(self, ids: Sequence[int], top_n: int) -> None:
        self.ids = list(ids)
        self.top_n = top_n
        self._tokens: list[PromptToken] = [PromptToken(self.ids[0], None, None, None, ())] if self.ids else []

    def observe(self, begin: int, logits: np.ndarray) -> None:
        """``logits`` [S, V]: those after positions ``begin .. begin + S - 1`` (positions past the
        prompt, such as a beam run's forced prefix, are ignored). Chunks come in order."""
        if begin >= len(self.ids) - 1:
            return
        if begin + 1 != len(self._tokens):
            raise ValueError(f"a chunk from position {begin} after {len(self._tokens)} scored tokens")
        count = max(0, min(len(logits), len(self.ids) - 1 - begin))
        for first in range(0, count, SCORE_BLOCK):  # float64 work arrays of SCORE_BLOCK rows at a time
            last = min(count, first + SCORE_BLOCK)
            targets = self.ids[begin + 1 + first : begin + 1 + last]
            self._tokens.extend(score_rows(logits[first:last], targets, self.top_n))

    def result(self) -> PromptSurprisal:
        if len(self._tokens) != len(self.ids):
            raise RuntimeError(f"{len(self._tokens)} of {len(self.ids)} prompt tokens scored")
        return PromptSurprisal(tuple(self._tokens))
