"""What one step did, for users to inspect: ``StepTrace`` and its parts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from inference.sampling.candidates import Candidates


@dataclass(frozen=True, slots=True)
class Range:
    """The values a number of a trace may take, in its field's type (``Annotated[float, Range(0, 1)]``):
    what whoever reads a trace back (an event, a saved run's import) checks and its schema says."""

    low: float
    high: float | None = None


MAX_INT = 2**31 - 1  # token ids, positions, counts: what every database column holds
Prob = Annotated[float, Range(0, 1)]
Count = Annotated[int, Range(0, MAX_INT)]  # a token id, a rank, a count


@dataclass(frozen=True)
class Alternative:
    """One token: raw probability (softmax of the model's logits), final probability (0.0 if
    removed) and the name of the stage that removed it (None if it was kept)."""

    id: Count
    raw_prob: Prob
    prob: Prob
    removed_by: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "raw_prob": self.raw_prob, "prob": self.prob, "removed_by": self.removed_by}


@dataclass(frozen=True)
class Watched:
    """A token a user asked to follow, at one step, wherever it ranks: its raw and final
    probability and ``removed_by`` (as ``Alternative``), and its rank before any stage
    (``raw_rank``: 1 = the most likely, ties lower id first, as ``alternatives`` are listed) and in
    the final distribution (``rank``, in pick order as ``draw_interval`` stacks it). A rank is None
    where the token is not in the running: ``raw_rank`` for a token the model itself ruled out
    (-inf), ``rank`` for one a stage removed."""

    id: Count
    raw_prob: Prob
    prob: Prob
    raw_rank: Count | None
    rank: Count | None
    removed_by: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "raw_prob": self.raw_prob,
            "prob": self.prob,
            "raw_rank": self.raw_rank,
            "rank": self.rank,
            "removed_by": self.removed_by,
        }


@dataclass(frozen=True)
class StageCount:
    """A stage's name and how many tokens were still in the running after it."""

    name: str
    kept: Count

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kept": self.kept}


class TokenLookup:
    """Answers ``Alternative`` questions about any token id for one step, from references to the
    step's candidate sets (nothing is copied: a stage that removes nothing shares its input's ids)."""

    def __init__(self, raw: Candidates, outputs: list[tuple[str, Candidates]]) -> None:
        self.raw = raw
        self.final = outputs[-1][1] if outputs else raw
        # Only the ids of intermediate sets are kept; their logits can be freed.
        self.kept_ids = [(name, out.ids) for name, out in outputs]

    @staticmethod
    def _prob(cand: Candidates, token: int) -> float:
        pos = cand.position(token)
        return 0.0 if pos is None else float(cand.softmax.e[pos] / cand.softmax.z)

    def removed_by(self, token: int) -> str | None:
        ids = self.raw.ids
        if self.raw.position(token) is None:
            return None  # -inf from the model itself: never a candidate
        for name, kept in self.kept_ids:
            if kept is not ids:  # the stage removed something
                pos = int(np.searchsorted(kept, token))
                if pos == len(kept) or kept[pos] != token:
                    return name
                ids = kept
        return None

    def describe(self, token: int) -> Alternative:
        token = int(token)
        if not 0 <= token < self.raw.vocab_size:
            raise ValueError(f"token id must be in [0, {self.raw.vocab_size - 1}]; got {token}")
        return Alternative(token, self._prob(self.raw, token), self._prob(self.final, token), self.removed_by(token))

    def draw_interval(self, token: int) -> tuple[float, float] | None:
        """The draws u that pick ``token``: its segment [start, end) of the final distribution
        stacked in pick order (final probability descending, ties lower id first; ``chain.pick``),
        where start is the final probability of every token ahead of it. None if its final
        probability is 0 (a forced token a stage removed). One pass over the final set, whatever
        the token's rank: the segment is true for a token far outside the top N too."""
        final = self.final
        pos = final.position(int(token))
        soft = final.softmax
        if pos is None or soft.e[pos] == 0:
            return None
        own = soft.e[pos]
        ahead = soft.ahead(pos)
        return ahead / soft.z, min(1.0, (ahead + own) / soft.z)

    def watch(self, tokens: Sequence[int]) -> tuple[Watched, ...]:
        """``Watched`` for each of ``tokens``: the probabilities and ``removed_by`` of
        ``describe_many`` (the same numbers the alternatives carry) and each token's two ranks, one
        pass over the raw and the final set per token."""
        described = self.describe_many(np.asarray(tokens, dtype=np.int64))
        return tuple(
            Watched(
                a.id, a.raw_prob, a.prob, _rank(self.raw.ordered_values, self.raw, a.id), self._final_rank(a.id), a.removed_by
            )
            for a in described
        )

    def _final_rank(self, token: int) -> int | None:
        soft = self.final.softmax
        pos = self.final.position(token)
        if pos is None or soft.e[pos] == 0:
            return None
        return _rank(soft.e, self.final, token)

    def describe_many(self, tokens: np.ndarray) -> tuple[Alternative, ...]:
        """``describe`` for each of ``tokens``, with one vectorized lookup per candidate set instead of
        one per token (the same numbers: the same float64 divisions, elementwise)."""
        tokens = np.asarray(tokens, dtype=np.int64).reshape(-1)
        if not len(tokens):
            return ()
        bad = tokens[(tokens < 0) | (tokens >= self.raw.vocab_size)]
        if len(bad):
            raise ValueError(f"token id must be in [0, {self.raw.vocab_size - 1}]; got {int(bad[0])}")
        raw_probs, in_raw = self._probs(self.raw, tokens)
        final_probs = raw_probs if self.final is self.raw else self._probs(self.final, tokens)[0]  # no stage: the same set
        removed: list[str | None] = [None] * len(tokens)
        pending = in_raw.copy()  # in the running so far (never-candidates are removed by nobody)
        ids = self.raw.ids
        for name, kept in self.kept_ids:
            if kept is not ids:  # the stage removed something
                pos = np.minimum(np.searchsorted(kept, tokens), len(kept) - 1)
                present = kept[pos] == tokens
                for i in np.flatnonzero(pending & ~present):
                    removed[i] = name
                pending &= present
                ids = kept
        # tolist: the same ints and floats as int() and float() of each element, in one call per array
        return tuple(map(Alternative, tokens.tolist(), raw_probs.tolist(), final_probs.tolist(), removed))

    @staticmethod
    def _probs(cand: Candidates, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Probabilities of ``tokens`` in ``cand`` (0 where absent) and which are present."""
        pos, hit = cand.positions(tokens)
        probs = np.zeros(len(tokens), dtype=np.float64)
        probs[hit] = cand.softmax.e[pos] / cand.softmax.z
        return probs, hit


def _rank(values: np.ndarray, cand: Candidates, token: int) -> int | None:
    """1 + how many of ``cand``'s tokens come before ``token`` when ``values`` (one per candidate,
    higher first) order them, ties lower id first (``cand.ids`` ascend). None if not a candidate."""
    pos = cand.position(token)
    if pos is None:
        return None
    own = values[pos]
    return 1 + int(np.count_nonzero(values > own)) + int(np.count_nonzero(values[:pos] == own))


@dataclass(frozen=True)
class StepTrace:
    """One step of the chain. ``alternatives`` are the top-N tokens by raw probability (highest
    first, ties lower id first); ``chosen`` describes the picked token even if it is not among
    them. ``draw_interval`` is the chosen token's segment of the cumulative bar of final
    probabilities in pick order: [start, end) holds ``draw`` when the token was picked (not
    forced). ``watched`` follows the tokens the caller asked to watch (``Watched``), in its order.
    ``own_pick`` is what the chain's own choice took, which a forced ``token`` replaced. ``token``, ``draw``, ``draw_interval``, ``chosen``, ``raw_prob`` and ``prob`` are None
    for ``chain.trace`` (nothing picked); ``draw`` is None when greedy. ``describe(id)`` /
    ``removed_by(id)`` answer for any token id (e.g. a forced one); the trace keeps references to
    the step's arrays for that, so keep ``to_dict()`` rather than the trace itself when storing
    many steps."""

    token: int | None
    draw: float | None
    raw_prob: float | None
    prob: float | None
    alternatives: tuple[Alternative, ...]
    chosen: Alternative | None
    draw_interval: tuple[float, float] | None
    stages: tuple[StageCount, ...]
    entropy_before: float
    entropy_after: float
    greedy: bool
    lookup: TokenLookup = field(repr=False, compare=False)
    watched: tuple[Watched, ...] = ()
    # the token the chain's own choice took (its pick from ``draw``, or greedy's): ``token`` unless
    # the caller forced another (a branch's prefix); None for ``chain.trace``
    own_pick: int | None = None

    def describe(self, token: int) -> Alternative:
        return self.lookup.describe(token)

    def removed_by(self, token: int) -> str | None:
        return self.lookup.removed_by(int(token))

    def to_dict(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "greedy": self.greedy,
            "draw": self.draw,
            "draw_interval": None if self.draw_interval is None else list(self.draw_interval),
            "raw_prob": self.raw_prob,
            "prob": self.prob,
            "entropy": {"before": self.entropy_before, "after": self.entropy_after},
            "stages": [s.to_dict() for s in self.stages],
            "alternatives": [a.to_dict() for a in self.alternatives],
            "chosen": None if self.chosen is None else self.chosen.to_dict(),
            "watched": [w.to_dict() for w in self.watched],
        }
