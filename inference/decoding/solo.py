"""Drivers that run one program on a decoder state of its own: ``SoloDriver`` (with or without a KV
cache), and ``SpeculativeDriver`` for a speculative ``Generation``, which feeds the pending token and
the drafted ones in one pass and cuts the cache back past the rejected drafts. (Many programs share
one batch in ``inference.batching.scheduler``; both take the same tokens for the same logits.)
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from inference.decoding.program import Program
from inference.decoding.results import BeamStep, Started, TokenStep, Verification
from inference.decoding.sampling_program import Generation
from inference.engine import DecodeState
from inference.prefill import prefill
from inference.runtime import Runtime


class SoloDriver:
    """Drives one program on a decoder state of its own (with or without a KV cache)."""

    def __init__(self, runtime: Runtime, program: Program) -> None:
        self.program = program
        self.state: DecodeState = runtime.decoder.new_state(batch_size=1, use_cache=program.request.use_cache)
        self._logits: np.ndarray | None = None  # [r, V] not yet handed to the program

    def start(self, is_cancelled: Callable[[], bool] = lambda: False) -> Started:
        """Prefills the program's prompt in chunks (``Cancelled`` between them); the cache is then
        copied to every row the program starts with."""
        ids = self.program.prepare()
        logits = prefill(self.state, ids, is_cancelled, surprisal=self.program.surprisal)  # [1, V]
        self._logits = self.spread(logits)
        return self.program.started()

    def spread(self, logits: np.ndarray) -> np.ndarray:
        """The prompt's cache and last ``logits`` [1, V] copied to every row the program starts
        with: [rows, V]."""
        rows = self.program.rows_after_prefill
        if rows == 1:
            return logits
        self.state.reorder([0] * rows)
        return np.repeat(logits, rows, axis=0)

    def next_logits(self) -> np.ndarray:
        """Feeds what the program chose last (each beam continuing its parent's row): [rows, V]."""
        feed = self.program.feed()
        if feed.parents is not None:
            self.state.reorder(feed.parents)
        return self.state.append_tokens(feed.tokens[:, None])

    def step(self) -> list[TokenStep] | list[BeamStep]:
        """Feeds what the program chose last (not on the first step) and hands it the logits."""
        began = time.perf_counter()
        logits, self._logits = self._logits, None
        if logits is None:
            logits = self.next_logits()
        return self.program.advance(logits, began)


class SpeculativeDriver(SoloDriver):
    """Drives a speculative ``Generation`` (one sample): each step feeds the pending token and the
    drafted ones in one pass, lets the program judge them, and rolls the cache back past the
    rejected drafts. A step with nothing drafted is a plain one."""

    program: Generation

    def step(self) -> list[Verification | TokenStep]:  # type: ignore[override]
        began = time.perf_counter()
        logits, self._logits = self._logits, None
        if logits is not None:  # the first token, from the prompt's logits
            return self.program.advance(logits, began)
        draft = self.program.draft()
        if not draft.tokens:
            return self.program.advance(self.next_logits(), began)
        pending = int(self.program.feed().tokens[0])
        kept = self.state.length + 1  # the cache after the pending token
        logits = self.state.append_tokens([pending, *draft.tokens], all_logits=True)[0]  # [m + 1, V]
        verification, steps = self.program.verify(logits, draft, began)
        self.state.truncate(kept + verification.accepted)  # the corrected or bonus token is fed next
        return [verification, *steps]
