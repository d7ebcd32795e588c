"""Repairs saved runs that hold text no page can show: ``python manage.py repair_run_text``.

Why: before saving refused it (``Run.save``), a run could be saved with a lone surrogate — half of
a UTF-16 pair, which a JSON escape such as ``"\\ud800"`` in a stop string, a ``logit_bias`` key or
an imported file produces on its own. SQLite keeps it inside a JSON column as the escape, and from
then on the run's permalink, its export and every comparison that includes it failed with a 500,
because the text cannot be encoded as UTF-8. U+0000 is treated the same way: SQLite stores it, but
PostgreSQL refuses it, so such a run could never move to PostgreSQL through an export.
(PostgreSQL itself never stored either: it refused those runs when they were saved.)

The command replaces each such character with U+FFFD (the replacement character) in every text
and JSON field of every run, and saves only the fields it changed, all in one transaction.
``--dry-run`` reports what it would change and changes nothing. Verbosity 0 prints nothing,
1 (the default) a summary, 2 each repaired run with the first bad field of each changed field.
Safe to run again: a repaired run has nothing left to repair.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import DEFAULT_DB_ALIAS, transaction

from playground.runs.models import Run
from playground.runs.text_check import first_unencodable, repaired

BATCH = 200  # runs read at a time: a run's tokens may be large


class DryRun(Exception):
    """Raised at the end of a dry run to roll its transaction back."""


class Command(BaseCommand):
    help = "Replace text that cannot be stored or shown (lone surrogates, U+0000) in saved runs with U+FFFD."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="report what would be repaired; change nothing")
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS, help="the database alias (default: %(default)s)")

    def handle(self, *args: Any, dry_run: bool, database: str, verbosity: int, **options: Any) -> None:
        checked = changed = 0
        try:
            with transaction.atomic(using=database):
                for run in Run.objects.using(database).order_by("pk").iterator(chunk_size=BATCH):
                    checked += 1
                    fields = self._repair(run)
                    if not fields:
                        continue
                    changed += 1
                    if verbosity >= 2:
                        where = "; ".join(f"{path}: {problem}" for path, problem in fields.values())
                        self.stdout.write(f"run {run.id}: {where}")
                    if not dry_run:
                        run.save(using=database, update_fields=list(fields))
                if dry_run:
                    raise DryRun
        except DryRun:
            pass
        if verbosity >= 1:
            verb = "would repair" if dry_run else "repaired"
            self.stdout.write(f"{verb} {changed} of {checked} runs" + (" (dry run: nothing changed)" if dry_run else ""))

    @staticmethod
    def _repair(run: Run) -> dict[str, tuple[str, str]]:
        """Repairs the run in memory; returns the changed fields, each with its first bad path."""
        fields = {}
        for name, value in list(run.text_fields()):
            found = first_unencodable(value, name)
            if found is not None:
                setattr(run, name, repaired(value))
                fields[name] = found
        return fields
