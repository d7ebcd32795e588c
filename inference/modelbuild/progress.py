"""Progress of a build: one line when a step starts and one when it ends, on stderr by default."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Receives a build's events. This base class ignores them (a silent build).

    ``verbosity``: 0 quiet, 1 the build's own steps, 2 also the tools' logs and warnings.
    """

    verbosity = 0

    def step_started(self, index: int, total: int, name: str) -> None:
        """Step ``index`` of ``total`` has started."""

    def step_finished(self, index: int, total: int, name: str, seconds: float) -> None:
        """Step ``index`` of ``total`` has finished after ``seconds``."""

    def info(self, message: str) -> None:
        """A line worth showing (a decision, a result)."""


class ConsoleProgress(Progress):
    """Writes ``[n/N] name …`` and ``[n/N] name: 12.3 s`` lines to a stream (stderr by default)."""

    def __init__(self, stream: TextIO | None = None, verbosity: int = 1) -> None:
        self.stream = sys.stderr if stream is None else stream  # bound now: builds redirect sys.stderr
        self.verbosity = verbosity

    def _write(self, line: str) -> None:
        if self.verbosity > 0:
            self.stream.write(line + "\n")
            self.stream.flush()

    def step_started(self, index: int, total: int, name: str) -> None:
        self._write(f"[{index}/{total}] {name} …")

    def step_finished(self, index: int, total: int, name: str, seconds: float) -> None:
        self._write(f"[{index}/{total}] {name}: {seconds:.1f} s")

    def info(self, message: str) -> None:
        self._write(message)


class StepTimer:
    """Numbers the steps of one build, reports them, and keeps each step's duration."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress = progress
        self.total = total
        self.index = 0
        self.seconds: dict[str, float] = {}

    def step(self, key: str, name: str) -> _Step:
        """A context manager timing step ``key`` (the manifest's name for it), shown as ``name``."""
        self.index += 1
        return _Step(self, self.index, key, name)


class _Step:
    def __init__(self, timer: StepTimer, index: int, key: str, name: str) -> None:
        self.timer, self.index, self.key, self.name = timer, index, key, name

    def __enter__(self) -> _Step:
        self.start = time.perf_counter()
        self.timer.progress.step_started(self.index, self.timer.total, self.name)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        seconds = time.perf_counter() - self.start
        if exc_type is None:
            self.timer.seconds[self.key] = round(seconds, 2)
            self.timer.progress.step_finished(self.index, self.timer.total, self.name, seconds)
