"""The stage template and the per-step context the stages read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from inference.sampling.candidates import Candidates


class StepContext:
    """What one step's stages may read besides the candidates: the history (token ids, oldest
    first), computed once and shared. It never changes during the step."""

    def __init__(self, history, vocab_size: int) -> None:
        self._raw_history = history
        self.vocab_size = vocab_size
        self._history: np.ndarray | None = None
        self._counts: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def history(self) -> np.ndarray:
        if self._history is None:
            h = np.array(self._raw_history, dtype=np.int64).reshape(-1)
            if len(h) and (h.min() < 0 or h.max() >= self.vocab_size):
                raise ValueError(f"history holds token ids outside [0, {self.vocab_size - 1}]")
            h.flags.writeable = False
            self._history = h
        return self._history

    def counts(self, window: int) -> tuple[np.ndarray, np.ndarray]:
        """(distinct token ids, their counts) over the last ``window`` history tokens (0 = all)."""
        if window not in self._counts:
            h = self.history[-window:] if window else self.history
            self._counts[window] = np.unique(h, return_counts=True)
        return self._counts[window]


class Stage:
    """One step of the chain. Constant parameters are checked in ``__init__``; ``apply`` returns
    new candidates (never edits its input); ``accept`` and ``reset`` only matter for stages with
    state (mirostat's mu, xtc's random stream)."""

    name: ClassVar[str]

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        raise NotImplementedError

    def accept(self, token: int, out: Candidates) -> None:
        """The chain picked ``token``; ``out`` is what this stage returned for that step."""

    def reset(self) -> None:
        """Back to the state of a fresh run."""

    def follow(self, tokens: Sequence[int]) -> None:
        """``tokens`` are already in the text (an inspected position's path): a stage whose state
        follows from the tokens alone (the grammar) catches up; the others keep a fresh state."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"
