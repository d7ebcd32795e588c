"""``manage.py runworker inference``: channels' command, with the capacity-aware intake
(``playground.worker.intake.IntakeWorker``: the shared channel is read only while the worker has room)."""

from __future__ import annotations

from channels.management.commands import runworker

from playground.worker.intake import IntakeWorker


class Command(runworker.Command):
    worker_class = IntakeWorker
