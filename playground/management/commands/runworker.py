"""``manage.py runworker inference``: channels' command, with the capacity-aware intake
(``playground.worker.IntakeWorker``: the shared channel is read only while the worker has room)."""

from __future__ import annotations

from channels.management.commands import runworker

from playground.worker import IntakeWorker


class Command(runworker.Command):
    worker_class = IntakeWorker
