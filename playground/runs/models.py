"""Saved runs: one row per run, everything needed to show it again and to reproduce it.

Per-token data (each token's alternatives, stage counts, entropy and draw) lives compactly in one
JSON column, ``tokens``, as rows read and written by ``playground.runs.token_rows`` (see
``playground.runs.schema`` for the expanded, documented export). Ids are random and unguessable;
nothing lists all runs (``playground.runs.ids``).

A run is never saved with text that cannot be stored or shown (``playground.runs.text_check``):
``Run.save``, and ``bulk_create``, ``bulk_update`` and ``update`` of its queries, refuse it with
``UnencodableText`` naming the field, whoever the caller is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.db import models
from django.utils import timezone

from inference.model_catalog import DEFAULT_MODELS
from playground.runs import token_rows
from playground.runs.conversation import messages_from_stored
from playground.runs.errors import UnencodableText
from playground.runs.ids import check_delete_token, new_run_id
from playground.runs.stored_params import params_from_stored
from playground.runs.text_check import first_unencodable


def _refuse_unencodable(name: str, value: Any) -> None:
    found = first_unencodable(value, name)
    if found is not None:
        raise UnencodableText(found[0], f"{found[0]} {found[1]}; nothing was saved")


class RunQuerySet(models.QuerySet):
    """Bulk writes check the text they write as ``Run.save`` does."""

    def bulk_create(self, objs: Iterable[Run], *args: Any, **kwargs: Any) -> list[Run]:
        objs = list(objs)
        for run in objs:
            run.refuse_unencodable_text()
        return super().bulk_create(objs, *args, **kwargs)

    def bulk_update(self, objs: Iterable[Run], fields: Any, *args: Any, **kwargs: Any) -> int:
        objs = list(objs)
        for run in objs:
            run.refuse_unencodable_text()
        return super().bulk_update(objs, fields, *args, **kwargs)

    def update(self, **kwargs: Any) -> int:
        for name, value in kwargs.items():
            if isinstance(value, (str, list, dict)):  # values, not expressions
                _refuse_unencodable(name, value)
        return super().update(**kwargs)


class Run(models.Model):
    class Status(models.TextChoices):
        COMPLETE = "complete"  # ended by eos, a stop string or max_tokens
        CANCELLED = "cancelled"  # stopped by the user or by the browser closing
        FAILED = "failed"  # the model failed after the run started

    class Source(models.TextChoices):
        LIVE = "live"  # recorded by the inference worker
        IMPORTED = "imported"  # created from an export file

    id = models.CharField(primary_key=True, max_length=43, default=new_run_id, editable=False)
    delete_token_hash = models.CharField(max_length=64, help_text="sha256 of the delete token given once in done")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    status = models.CharField(max_length=16, choices=Status.choices)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.LIVE)
    imported_from = models.CharField(max_length=43, blank=True, default="", help_text="the export's own run id")

    # What was asked: ``prompt`` and ``system``, or a chat conversation (``messages``, whose last user
    # message is also ``prompt``: see playground.runs.conversation).
    prompt = models.TextField()
    mode = models.CharField(max_length=16)
    system = models.TextField(null=True, blank=True)
    messages = models.JSONField(
        null=True, blank=True, help_text="[[role, content], …]: a chat request's whole conversation; null for a prompt"
    )
    continue_final_message = models.BooleanField(default=False, help_text="the last (assistant's) message was continued")
    prompt_tokens = models.JSONField(help_text="[[id, text], …]: the exact sequence fed to the model")
    prompt_surprisal = models.JSONField(
        null=True,
        blank=True,
        help_text="how surprising each prompt token was, read off the prefill (the export's shape); null: not asked for",
    )
    params = models.JSONField(help_text="the normalized parameters, defaults filled in")  # read as parameters()
    seed = models.PositiveBigIntegerField(help_text="0 … 2^63−1")
    top_n = models.PositiveSmallIntegerField()
    use_cache = models.BooleanField(default=True)
    prefix_tokens = models.JSONField(default=list, help_text="token ids forced first (a branch's path)")
    watch = models.JSONField(default=list, help_text="token ids followed at every step (the request's watch)")
    typed_tokens = models.PositiveIntegerField(
        default=0, help_text="how many of the last prefix tokens the person typed (edit and continue)"
    )
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="branches")
    branch_index = models.PositiveIntegerField(null=True, blank=True, help_text="position in the parent where this branch starts")

    # The model it ran on: the served model's id (inference.model_catalog; runs saved before there
    # were several models read as the default, SmolLM2), and its build.
    model = models.CharField(
        max_length=64, default=DEFAULT_MODELS[0], help_text="the served model's id (PLAYGROUND_MODELS), e.g. gemma-3-270m"
    )
    model_name = models.CharField(max_length=200)
    manifest_sha256 = models.CharField(max_length=64)
    onnxruntime_version = models.CharField(max_length=40)
    execution_provider = models.CharField(max_length=80)
    context_window = models.PositiveIntegerField(null=True, blank=True)

    # What came out.
    reason = models.CharField(
        max_length=16, blank=True, default="", help_text="eos, stop, max_tokens, cancelled; empty when failed"
    )
    stop_string = models.TextField(null=True, blank=True)
    text = models.TextField(blank=True, default="")
    tail = models.TextField(blank=True, default="")
    tokens = models.JSONField(default=list, help_text="one row per generated token, as playground.runs.token_rows")
    beam_steps = models.JSONField(default=list)
    speculative = models.JSONField(
        null=True,
        blank=True,
        help_text="a speculative run's totals (done.speculative) and verification events; null for a plain run",
    )
    samples = models.JSONField(default=list)
    beams = models.JSONField(default=list)
    usage = models.JSONField(default=dict)
    timing = models.JSONField(default=dict)
    error = models.JSONField(null=True, blank=True, help_text="the error event's error object, when failed")

    objects = RunQuerySet.as_manager()

    class Meta:
        # The table keeps the name it had when ``Run`` lived in the ``playground`` app (migration
        # runs 0001): moving the model moved no data, and a process of the previous release still
        # reads this table while a rolling upgrade runs.
        db_table = "playground_run"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.id} ({self.status})"

    def conversation(self) -> list[dict[str, str]] | None:
        """The chat messages the run was asked with (``[{role, content}, …]``), or None when it was
        asked with ``prompt`` (and ``system``)."""
        return messages_from_stored(self.messages)

    def parameters(self) -> dict[str, Any]:
        """The parameters the run was made with (``params`` keeps the grammar as its JSON text:
        ``playground.runs.stored_params``)."""
        return params_from_stored(self.params)

    def check_delete_token(self, token: str) -> bool:
        return check_delete_token(token, self.delete_token_hash)

    def text_fields(self) -> Iterator[tuple[str, Any]]:
        """Every field that holds text (strings, or JSON with strings in it), as (name, value)."""
        for field in self._meta.concrete_fields:
            if isinstance(field, (models.CharField, models.TextField, models.JSONField)):
                yield field.attname, getattr(self, field.attname)

    def unencodable_text(self) -> tuple[str, str] | None:
        """The first field path holding text that cannot be stored or shown, and the problem.
        Tokens are named by their fields (``tokens[3].alternatives[0].token``), not positions."""
        for name, value in self.text_fields():
            if name == "tokens":
                found = first_unencodable(value)
                if found is not None:  # name it by field: a stored row is positional
                    found = first_unencodable([token_rows.exported(token_rows.from_stored(row)) for row in value], name)
            else:
                found = first_unencodable(value, name)
            if found is not None:
                return found
        return None

    def refuse_unencodable_text(self) -> None:
        """Raises ``UnencodableText`` naming the first field that holds text no page could show."""
        found = self.unencodable_text()
        if found is not None:
            raise UnencodableText(found[0], f"{found[0]} {found[1]}; the run was not saved")

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Saves the run; raises ``UnencodableText`` (nothing written) if any of its text could not
        be stored or shown again."""
        self.refuse_unencodable_text()
        super().save(*args, **kwargs)
