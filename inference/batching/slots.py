"""What the scheduler tells about a run's place in the batch (plain values, read by the wire's
events without the scheduler itself)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Slots:
    """Where a run sits in the batch: ``started``'s ``batch`` field."""

    slots: tuple[int, ...]
    max_batch: int


@dataclass(frozen=True)
class BatchStep:
    """One step of the batch: ``token``'s ``batch`` field. ``rows`` and ``requests`` count the
    rows and runs that took a token in this step."""

    step: int
    rows: int
    requests: int
