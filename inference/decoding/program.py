"""What a run's *program* is to whoever drives it (``SoloDriver``, ``inference.batching.scheduler``),
and what every program shares: the prompt's encoding, the step clock, and the two rules of the loop's
parameters a step applies (``min_tokens`` holds off the end, ``penalize_prompt`` widens the history).

A program never calls the decoder: ``prepare`` gives the ids to prefill, ``advance`` takes the logits
of its rows and returns the step's ``TokenStep``s (or one ``BeamStep``), ``feed`` says which tokens
its rows get next (and, for beams, which row's cache each continues).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from inference.decoding.loop_params import LoopParams
from inference.decoding.request import GenerationRequest
from inference.decoding.results import BeamStep, Finished, Started, TokenStep
from inference.decoding.surprisal import SurprisalCollector
from inference.runtime import Runtime


class Program(Protocol):
    """One run's own logic, fed logits by a driver (``SoloDriver`` or ``inference.batching.scheduler``)."""

    request: GenerationRequest
    rows: int  # decoder rows it uses at most
    rows_after_prefill: int  # rows the prompt's cache is copied to once prefilled
    surprisal: SurprisalCollector | None  # set by ``prepare`` when the request asks for prompt scores: the driver feeds it

    def prepare(self) -> list[int]: ...  # the ids to prefill (checked against the context window)
    def started(self) -> Started: ...
    def advance(self, logits: np.ndarray, began: float) -> list[TokenStep] | list[BeamStep]: ...
    def feed(self) -> Feed: ...
    def is_done(self) -> bool: ...
    def cancel(self) -> None: ...
    def finish(self) -> Finished: ...


@dataclass(frozen=True)
class Feed:
    """What a program's rows get next: ``tokens`` [r], row i after the cache of row ``parents[i]``
    (None: each row after its own)."""

    tokens: np.ndarray  # [r] int64
    parents: list[int] | None = None


def encode_prompt(runtime: Runtime, request: GenerationRequest) -> list[int]:
    """The prompt's ids as the model reads them; ``ParamError`` when they and the forced prefix
    leave no room for ``max_tokens`` in the context window."""
    ids = runtime.codec.encode(request.prompt, request.mode, request.system, request.chat)
    request.loop.check_context(len(ids) + len(request.prefix_tokens), runtime.shape.context_window)
    return ids


def collector(request: GenerationRequest, prompt_ids: list[int]) -> SurprisalCollector | None:
    return SurprisalCollector(prompt_ids, request.top_n) if request.prompt_scores else None


def started(request: GenerationRequest, prompt_ids: list[int], surprisal: SurprisalCollector | None) -> Started:
    return Started(request, prompt_ids, None if surprisal is None else surprisal.result())


class StepClock:
    """A run's timings: from its start to the first step (the prefill and the first pick), and the
    rate of the tokens made after the first step."""

    now = staticmethod(time.perf_counter)  # the clock (a test scripts it here, not on the time module)

    def __init__(self) -> None:
        self.started_at = self.now()
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.tokens_after_first = 0  # over every sample: what decode_tokens_per_s counts

    def tick(self, tokens: int) -> float:
        """Marks the end of a step that made ``tokens`` tokens; returns the time."""
        now = self.now()
        if self.first_at is None:
            self.first_at = now
        else:
            self.tokens_after_first += tokens
        self.last_at = now
        return now

    def timing(self) -> dict[str, float | None]:
        """``Finished``'s timing fields."""
        first, last = self.first_at, self.last_at
        rate = None
        if first is not None and last is not None and self.tokens_after_first and last > first:
            rate = self.tokens_after_first / (last - first)
        return {
            "time_to_first_token_ms": None if first is None else (first - self.started_at) * 1000.0,
            "decode_tokens_per_s": rate,
            "total_ms": (self.now() - self.started_at) * 1000.0,
        }


def hold_off_end(logits: np.ndarray, loop: LoopParams, new_tokens: int, eos_ids: frozenset[int]) -> np.ndarray:
    """The logits [V] the chain sees after ``new_tokens`` new tokens: before ``min_tokens`` of them,
    a copy with the end-of-sequence tokens ruled out; after, the logits themselves."""
    return without_tokens(logits, eos_ids) if new_tokens < loop.min_tokens else logits


def penalized_history(loop: LoopParams, prompt_ids: list[int], generated: list[int]) -> list[int]:
    """The tokens the penalties count: the tokens generated so far (the list itself), after the
    prompt's with ``penalize_prompt``."""
    return prompt_ids + generated if loop.penalize_prompt else generated


def without_tokens(logits: np.ndarray, ids: frozenset[int]) -> np.ndarray:
    """A copy of the logits [V] with these tokens ruled out (−inf): how ``min_tokens`` holds off
    the end-of-sequence tokens."""
    masked = logits.copy()
    masked[list(ids)] = -np.inf
    return masked
