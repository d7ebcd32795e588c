"""Where drafted tokens come from: a source proposes up to k tokens to follow a context, each with
the distribution q it was drawn from.

``PromptLookup`` needs no second model: the last few tokens of the context (the prompt and the
text so far) are looked up earlier in the same context, and what followed them there is the draft.
It shines where the output repeats its input (code being edited, a summary quoting its text). Its
drafts are chosen, not sampled, so q is a point mass on each drafted token (``Draft.q`` is None).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

MAX_NGRAM = 3  # the longest tail looked up; a longer match is tried first
MIN_NGRAM = 1


@dataclass(frozen=True)
class Draft:
    """Tokens proposed to follow the context, in order; ``q`` [len(tokens), V] the distributions
    they were drawn from, or None when each is a point mass on its token."""

    tokens: tuple[int, ...]
    q: np.ndarray | None = None

    def q_of(self, position: int, vocab_size: int) -> np.ndarray:
        """The draft distribution [V] float64 at ``position``."""
        if self.q is not None:
            return np.asarray(self.q[position], dtype=np.float64)
        point = np.zeros(vocab_size, dtype=np.float64)
        point[self.tokens[position]] = 1.0
        return point


class DraftSource(Protocol):
    name: str

    def propose(self, context: Sequence[int], k: int) -> Draft: ...  # up to k tokens, maybe none


class PromptLookup:
    """Drafts by n-gram lookup in the context itself (``prompt_lookup``)."""

    name = "prompt_lookup"

    def __init__(self, max_ngram: int = MAX_NGRAM, min_ngram: int = MIN_NGRAM) -> None:
        if not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram} and {max_ngram}")
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram

    def propose(self, context: Sequence[int], k: int) -> Draft:
        return Draft(lookup(context, k, self.max_ngram, self.min_ngram))


def lookup(context: Sequence[int], k: int, max_ngram: int = MAX_NGRAM, min_ngram: int = MIN_NGRAM) -> tuple[int, ...]:
    """Up to ``k`` tokens that followed the latest earlier occurrence of the context's last n
    tokens, for the longest n from ``max_ngram`` down to ``min_ngram`` that occurs; () when none does.

    The occurrence must start before the tail itself and be followed by at least one token; the
    continuation may run into the tail (a repeating pattern continues itself)."""
    ids = np.asarray(context, dtype=np.int64)
    size = len(ids)
    for n in range(min(max_ngram, size - 1), min_ngram - 1, -1):
        tail = ids[size - n :]
        windows = np.lib.stride_tricks.sliding_window_view(ids[: size - 1], n)  # [size - n, n]: starts 0 .. size-n-1
        starts = np.flatnonzero((windows == tail).all(axis=1))
        if len(starts):
            begin = int(starts[-1]) + n  # the latest match; what followed it
            return tuple(int(t) for t in ids[begin : begin + k])
    return ()
