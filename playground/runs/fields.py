"""The one table of a saved run's fields: how each is named in the export, which ``Run`` column
holds it, and how it is checked and converted on the way in and out.

Recording, export, import, the pages and the history's summaries all go through it:

- ``RUN``: the export's ``run`` object, part by part in the export's order: the run's own fields,
  then ``request``, ``prompt_tokens``, ``model``, ``result``, ``tokens``, ``beam_steps`` and
  ``speculative`` (a speculative run's totals and ``verification`` events; null otherwise).
- ``Part.exported(run)``: that part of a ``Run`` in the export's shape (``schema.run_to_dict`` is
  ``RUN.exported(run)``; a summary takes a few of the same values).
- ``Part.columns(values)``: values in the export's shape → ``Run`` keyword arguments. The recorder
  gives the ``started`` event's ``model`` and the ``done`` event's fields (which carry the export's
  keys) and the request it ran; the import gives what it checked.
- ``Field.check``: the import's check of one value (``checks``); a part whose values depend on one
  another (``request``, checked by the websocket's own parser; ``tokens``, within the request's
  ``top_n``) is checked by ``schema`` as a whole, and its fields have no check of their own.

The keys of ``model`` are the ``started`` event's ``model`` keys, and those of ``result`` the ``done``
event's, so a live run and an exported one are the same record.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from inference.model_catalog import DEFAULT_MODELS
from playground.runs import prompt_surprisal
from playground.runs.checks import (
    Check,
    a_bool,
    a_list,
    a_number,
    a_run_id,
    a_str,
    an_int,
    an_object,
    anything,
    objects,
    one_of,
    optional,
    text,
)
from playground.runs.conversation import messages_from_stored, stored_messages
from playground.runs.errors import SchemaError
from playground.runs.models import Run
from playground.runs.stored_params import params_from_stored, stored_params
from playground.runs.text_check import excerpt
from playground.runs.token_rows import exported, load_rows, run_origins, stored_row_from_event

MAX_LISTED = 64  # samples, beams: at most ``n`` / ``num_beams``
SAMPLE_KEYS = ("sample", "reason", "stop_string", "text", "tail", "completion_tokens")
BEAM_KEYS = ("token_ids", "cum_logprob", "score", "reason")
ERROR_KEYS = ("code", "message", "param")
MAX_TOKENS_PER_RUN = 200_000
PROMPT_TOKEN_KEYS = ("id", "text")
BEAM_STEP_KEYS = ("index", "beams", "pruned", "finished", "elapsed_ms")
PROPOSAL_KEYS = ("parent", "id", "token", "logprob", "cum_logprob")
SPECULATIVE_KEYS = ("totals", "verifications")
SPECULATIVE_TOTALS_KEYS = ("drafted", "checked", "accepted", "verifications", "switched_off_at", "reason")
SWITCHED_OFF_KEYS = ("rule", "tokens", "steps")
SWITCH_OFF_RULES = ("cannot_pay", "low_acceptance")
VERIFICATION_KEYS = ("sample", "index", "drafted", "accepted", "corrected", "bonus")
DRAFTED_KEYS = ("id", "token", "accepted", "p", "q", "draw")


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Field:
    """One value: ``key`` in the export (and in the events it is recorded from), ``attr`` the
    ``Run`` attribute that holds it; ``export`` turns the column's value into the export's and
    ``store`` the export's (or the event's) into the column's; ``empty`` is its value (in the
    export's form) when a record has none to give: a failed run's result, a version 1 file's."""

    key: str
    attr: str
    check: Check = anything
    export: Callable[[Any], Any] = _same
    store: Callable[[Any], Any] = _same
    empty: Any = None

    def exported(self, run: Run) -> Any:
        return self.export(getattr(run, self.attr))

    def columns(self, value: Any) -> dict[str, Any]:
        return {self.attr: self.store(value)}


@dataclass(frozen=True)
class Part:
    """An object of the export whose members are fields (or parts)."""

    key: str
    fields: tuple[Field | Part, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(f.key for f in self.fields)

    def __getitem__(self, key: str) -> Field | Part:
        return next(f for f in self.fields if f.key == key)

    def exported(self, run: Run) -> dict[str, Any]:
        return {f.key: f.exported(run) for f in self.fields}

    def columns(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` (the export's keys) as ``Run`` keyword arguments; a key left out leaves its
        column to the model's default (a new run's ``id``)."""
        return {attr: value for f in self.fields if f.key in values for attr, value in f.columns(values[f.key]).items()}

    def empty(self) -> dict[str, Any]:
        """Every field at its empty value (a fresh copy)."""
        return {f.key: copy.deepcopy(f.empty) for f in self.fields if isinstance(f, Field)}

    def checked(self, values: Mapping[str, Any], path: str) -> dict[str, Any]:
        """The part as an import reads it: exactly its keys, and its fields' values checked (``path``
        names them); a part within it is checked on its own."""
        an_object(values, path, self.keys)
        return {f.key: f.check(values[f.key], f"{path}.{f.key}") for f in self.fields if isinstance(f, Field)}


# Checks of the result's lists and objects.


def _usage(value: Any, path: str) -> dict[str, Any]:
    for key, count in an_object(value, path).items():
        optional(an_int)(count, f"{path}.{key}")
    return value


def _timing(value: Any, path: str) -> dict[str, Any]:
    for key, seconds in an_object(value, path).items():
        optional(a_number)(seconds, f"{path}.{key}")
    return value


def _samples(value: Any, path: str) -> list[Any]:
    for sample, p in objects(value, path, SAMPLE_KEYS, 0, MAX_LISTED):
        an_int(sample["sample"], f"{p}.sample")
        one_of(sample["reason"], f"{p}.reason", ("eos", "stop", "max_tokens", "cancelled"))
        optional(a_str)(sample["stop_string"], f"{p}.stop_string")
        a_str(sample["text"], f"{p}.text")
        a_str(sample["tail"], f"{p}.tail")
        an_int(sample["completion_tokens"], f"{p}.completion_tokens")
    return value


def _beams(value: Any, path: str) -> list[Any]:
    for beam, p in objects(value, path, BEAM_KEYS, 0, MAX_LISTED):
        for j, token in enumerate(a_list(beam["token_ids"], f"{p}.token_ids", 0, MAX_TOKENS_PER_RUN)):
            an_int(token, f"{p}.token_ids[{j}]")
        a_number(beam["cum_logprob"], f"{p}.cum_logprob", None)
        a_number(beam["score"], f"{p}.score", None)
        one_of(beam["reason"], f"{p}.reason", ("eos", "max_tokens", "cancelled"))
    return value


def _error(value: Any, path: str) -> dict[str, Any]:
    an_object(value, path, ERROR_KEYS)
    a_str(value["code"], f"{path}.code", 1, 64)
    a_str(value["message"], f"{path}.message", 0, 10_000)
    optional(a_str)(value["param"], f"{path}.param")
    return value


def _created_at(value: Any, path: str) -> datetime:
    """When the run was generated: kept by an import (a version 1 file without it: now)."""
    if value is None:
        return timezone.now()
    text = a_str(value, path, 1, 64)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SchemaError(path, f"must be an ISO 8601 date and time, got {excerpt(text)}") from None
    if moment.tzinfo is None:
        raise SchemaError(path, "must give its UTC offset (e.g. +00:00)")
    return moment


def _prompt_tokens(value: Any, path: str) -> list[Any]:
    for token, p in objects(value, path, PROMPT_TOKEN_KEYS, 1, MAX_TOKENS_PER_RUN):
        an_int(token["id"], f"{p}.id")
        a_str(token["text"], f"{p}.text")
    return value


def _beam_steps(value: Any, path: str) -> list[Any]:
    for i, step in enumerate(a_list(value, path, 0, MAX_TOKENS_PER_RUN)):
        _beam_step(step, f"{path}[{i}]")
    return value


def _current_totals(value: Any) -> Any:
    """A speculative record in today's shape, the stored value untouched: totals lacking ``reason``
    (recorded before the switch-off said why) get it null; totals lacking ``checked`` (recorded when
    ``drafted`` counted the checked drafts only) get ``checked`` from that old ``drafted`` and
    ``drafted`` re-counted from the verification records (every drafted token, checked or not)."""
    if not isinstance(value, dict) or not isinstance(value.get("totals"), dict):
        return value
    totals = {"reason": None} | value["totals"]
    if "checked" not in totals and "drafted" in totals:
        steps = value.get("verifications")
        proposed = (
            [len(s["drafted"]) for s in steps if isinstance(s, dict) and isinstance(s.get("drafted"), list)]
            if isinstance(steps, list)
            else []
        )
        totals = totals | {"checked": totals["drafted"], "drafted": sum(proposed)}
    return value | {"totals": totals}


def _speculative(value: Any, path: str) -> dict[str, Any]:
    """A speculative run's record: ``totals`` (``done.speculative``; null when the run failed; older
    shapes read as ``_current_totals`` says) and its ``verification`` events without their envelope.
    The totals are the sums over the verifications (``SpeculativeTotals``' one definition)."""
    data = an_object(_current_totals(value), path, SPECULATIVE_KEYS)
    if data["totals"] is not None:
        totals = an_object(data["totals"], f"{path}.totals", SPECULATIVE_TOTALS_KEYS)
        for key in ("drafted", "checked", "accepted", "verifications"):
            an_int(totals[key], f"{path}.totals.{key}")
        optional(an_int)(totals["switched_off_at"], f"{path}.totals.switched_off_at")
        if totals["reason"] is not None:
            reason = an_object(totals["reason"], f"{path}.totals.reason", SWITCHED_OFF_KEYS)
            one_of(reason["rule"], f"{path}.totals.reason.rule", SWITCH_OFF_RULES)
            an_int(reason["tokens"], f"{path}.totals.reason.tokens")
            a_number(reason["steps"], f"{path}.totals.reason.steps")
            if totals["switched_off_at"] is None:
                raise SchemaError(f"{path}.totals.reason", "must be null when switched_off_at is null")
    for step, p in objects(data["verifications"], f"{path}.verifications", VERIFICATION_KEYS, 0, MAX_TOKENS_PER_RUN):
        an_int(step["sample"], f"{p}.sample")
        an_int(step["index"], f"{p}.index")
        an_int(step["accepted"], f"{p}.accepted")
        for drafted, d in objects(step["drafted"], f"{p}.drafted", DRAFTED_KEYS, 1, 64):
            an_int(drafted["id"], f"{d}.id")
            a_str(drafted["token"], f"{d}.token")
            for key in ("p", "q", "draw"):
                optional(a_number)(drafted[key], f"{d}.{key}")
            optional(a_bool)(drafted["accepted"], f"{d}.accepted")
        for key in ("corrected", "bonus"):
            if step[key] is not None:
                chosen = an_object(step[key], f"{p}.{key}", ("id", "token"))
                an_int(chosen["id"], f"{p}.{key}.id")
                a_str(chosen["token"], f"{p}.{key}.token")
    if data["totals"] is not None:
        _totals_match(data["totals"], data["verifications"], f"{path}.totals")
    return data


def _totals_match(totals: dict[str, Any], verifications: list[dict[str, Any]], path: str) -> None:
    """The totals count what the verification records show: every drafted token, the checked ones
    (a verdict, true or false), the accepted ones, one pass per record."""
    drafts = [d for step in verifications for d in step["drafted"]]
    counted = {
        "drafted": len(drafts),
        "checked": sum(d["accepted"] is not None for d in drafts),
        "accepted": sum(d["accepted"] is True for d in drafts),
        "verifications": len(verifications),
    }
    for key, count in counted.items():
        if totals[key] != count:
            raise SchemaError(f"{path}.{key}", f"must equal the verification records' count, {count}; got {totals[key]}")


def _beam_step(data: Any, path: str) -> None:
    an_object(data, path, BEAM_STEP_KEYS)
    an_int(data["index"], f"{path}.index")
    optional(a_number)(data["elapsed_ms"], f"{path}.elapsed_ms")
    for key in ("beams", "pruned", "finished"):
        for proposal, p in objects(data[key], f"{path}.{key}", PROPOSAL_KEYS, 0, 1024):
            an_int(proposal["parent"], f"{p}.parent")
            an_int(proposal["id"], f"{p}.id")
            a_str(proposal["token"], f"{p}.token")
            a_number(proposal["logprob"], f"{p}.logprob", None)
            a_number(proposal["cum_logprob"], f"{p}.cum_logprob", None)


def _or_none(value: Any) -> Any:
    return value or None


def _or_empty(value: Any) -> Any:
    return value or ""


REQUEST = Part(
    "request",
    (
        Field("prompt", "prompt"),
        Field("mode", "mode"),
        Field("system", "system"),
        Field("messages", "messages", export=messages_from_stored, store=lambda m: None if m is None else stored_messages(m)),
        Field("continue_final_message", "continue_final_message"),
        Field("params", "params", export=params_from_stored, store=stored_params),
        Field("seed", "seed", export=int),  # a PositiveBigIntegerField may come back as another int type
        Field("top_n", "top_n"),
        Field("use_cache", "use_cache"),
        Field("prefix_tokens", "prefix_tokens", store=list),
        Field("watch", "watch", store=list, empty=[]),
        Field("typed_tokens", "typed_tokens", empty=0),  # optional in every version (schema)
    ),
)
MODEL = Part(
    "model",
    (
        Field("id", "model", text(1, 64), empty=DEFAULT_MODELS[0]),  # absent before several models: the default
        Field("name", "model_name", text(1, 200)),
        Field("manifest_sha256", "manifest_sha256", text(0, 64)),
        Field("execution_provider", "execution_provider", text(0, 80)),
        Field("onnxruntime_version", "onnxruntime_version", text(0, 40)),
        Field("context_window", "context_window", optional(lambda v, p: an_int(v, p, 1))),
    ),
)
RESULT = Part(
    "result",
    (
        Field("reason", "reason", export=_or_none, store=_or_empty),  # checked with the status
        Field("stop_string", "stop_string", optional(a_str)),
        Field("text", "text", a_str, empty=""),
        Field("tail", "tail", a_str, empty=""),
        Field("usage", "usage", _usage, empty={}),
        Field("timing", "timing", _timing, empty={}),
        Field("samples", "samples", _samples, empty=[]),
        Field("beams", "beams", _beams, empty=[]),
        Field("error", "error", optional(_error)),
    ),
)
PROMPT_TOKENS = Field(
    "prompt_tokens",
    "prompt_tokens",
    _prompt_tokens,
    export=lambda rows: [{"id": token_id, "text": token} for token_id, token in rows],
    store=lambda tokens: [[t["id"], t["text"]] for t in tokens],
)


@dataclass(frozen=True)
class TokensField(Field):
    """The run's tokens; a row saved before origins were gets the one its run implies
    (``token_rows.run_origins``: the request says which prefix tokens were typed or branched)."""

    def exported(self, run: Run) -> Any:
        rows = run_origins(load_rows(run.tokens), len(run.prefix_tokens), run.typed_tokens, run.branch_index)
        return [exported(row) for row in rows]


TOKENS = TokensField(
    "tokens",
    "tokens",
    store=lambda events: [stored_row_from_event(event) for event in events],
)
RUN = Part(
    "run",
    (
        Field("id", "id", optional(a_run_id)),
        Field("created_at", "created_at", _created_at, export=lambda moment: moment.isoformat()),
        Field("status", "status", lambda v, p: one_of(v, p, tuple(Run.Status.values))),
        Field("source", "source", lambda v, p: one_of(v, p, tuple(Run.Source.values))),
        Field("imported_from", "imported_from", optional(a_run_id), export=_or_none, store=_or_empty),
        Field("parent_run", "parent_id", optional(a_run_id)),
        Field("branch_index", "branch_index", optional(an_int)),
        REQUEST,
        PROMPT_TOKENS,
        Field("prompt_surprisal", "prompt_surprisal", optional(prompt_surprisal.check)),  # added later: optional
        MODEL,
        RESULT,
        TOKENS,
        Field("beam_steps", "beam_steps", _beam_steps),
        Field(
            "speculative", "speculative", optional(_speculative), export=_current_totals
        ),  # added later: optional in every version
    ),
)
