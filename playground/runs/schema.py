"""The versioned JSON export of a run or a comparison, and the validating import (docs/runs.md).

One definition serves both directions: the keys of every part of a run, and for the flat parts
(``model``, ``result``) which ``Run`` field each key comes from and how it is checked, are the
tables below; tokens are ``TokenRow``s, exported with ``to_event`` and imported with
``from_event`` after the checks. So whatever an export writes, the import reads back, and
export → import → export gives the same file again (only ``id``, ``source`` and
``imported_from`` say that it is a copy).

Versions: 3 (written now) has every field of every part, tokens included (``removed_by`` and
``forced`` on each token), and a chat run's whole conversation (``request.messages``,
``request.continue_final_message``). Version 2 files are version 3 without the conversation
(``_upgrade_v2``: ``messages`` null, ``continue_final_message`` false). Version 1 files may leave
out what version 1 left out; ``_upgrade_v1`` fills in the defaults, then they are version 2 files.

``request``: either ``prompt`` (and ``system``) with ``messages`` null and
``continue_final_message`` false, or ``messages`` (``[{role, content}, …]``, checked by the
websocket's own parser) with ``system`` null and ``prompt`` equal to the last user message's text
(``conversation.shown_prompt``).

``parse_export`` checks every field of an uploaded file and raises ``SchemaError`` naming the first
bad field by its path (``run.tokens[3].alternatives[0].prob``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from inference.generation import GenerationRequest
from inference.sampling.params import MAX_SEED
from playground import protocol
from playground.runs.conversation import messages_from_stored, shown_prompt, stored_messages
from playground.runs.errors import SchemaError
from playground.runs.models import RUN_ID_PATTERN, Run
from playground.runs.text_check import excerpt, first_unencodable
from playground.runs.token_rows import Alternative, Stage, TokenRow

__all__ = [
    "RUN_SCHEMA",
    "COMPARISON_SCHEMA",
    "VERSION",
    "READABLE_VERSIONS",
    "SchemaError",
    "ImportedRun",
    "run_to_dict",
    "run_export",
    "comparison_export",
    "parse_export",
    "parse_run_export",
    "parse_comparison_export",
    "compact_token",
    "expand_token",
]

RUN_SCHEMA = "token-playground.run"
COMPARISON_SCHEMA = "token-playground.comparison"
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
MAX_TOKENS_PER_RUN = 200_000
MAX_COMPARED = 4
MAX_INT = 2**31 - 1  # token ids, positions, counts: what every database column holds
RUN_ID = re.compile(RUN_ID_PATTERN)

RUN_KEYS = (
    "id",
    "created_at",
    "status",
    "source",
    "imported_from",
    "parent_run",
    "branch_index",
    "request",
    "prompt_tokens",
    "model",
    "result",
    "tokens",
    "beam_steps",
)
REQUEST_KEYS = (
    "prompt",
    "mode",
    "system",
    "messages",
    "continue_final_message",
    "params",
    "seed",
    "top_n",
    "use_cache",
    "prefix_tokens",
)
CONVERSATION_KEYS = ("messages", "continue_final_message")  # new in version 3
PROMPT_TOKEN_KEYS = ("id", "text")
BEAM_STEP_KEYS = ("index", "beams", "pruned", "finished", "elapsed_ms")
PROPOSAL_KEYS = ("parent", "id", "token", "logprob", "cum_logprob")
SAMPLE_KEYS = ("sample", "reason", "stop_string", "text", "tail", "completion_tokens")
BEAM_KEYS = ("token_ids", "cum_logprob", "score", "reason")
ERROR_KEYS = ("code", "message", "param")
REASONS = {"complete": ("eos", "stop", "max_tokens"), "cancelled": ("cancelled",), "failed": (None,)}

Check = Callable[[Any, str], Any]  # (exported value, its path) → the value to store, or SchemaError


def compact_token(event: Mapping[str, Any]) -> list[Any]:
    """A ``token`` event as its stored row. Kept for ``recording.py``, which should call
    ``playground.runs.token_rows.stored_row_from_event`` instead."""
    return TokenRow.from_event(event).to_stored()


def expand_token(row: list[Any]) -> dict[str, Any]:
    """A stored row as its exported token (the ``token`` event's fields). Kept for callers of the
    old name; new code reads ``TokenRow.from_stored(row)`` by field."""
    return TokenRow.from_stored(row).to_event()


# Field checks: each returns the value or raises SchemaError naming the path.


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _object(value: Any, path: str, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
    """An object; with ``keys``, it must have exactly those (none missing, none unknown)."""
    if not isinstance(value, dict):
        raise SchemaError(path, f"must be an object, got {_kind(value)}")
    if keys is not None:
        unknown = sorted(set(value) - set(keys))
        if unknown:
            raise SchemaError(_join(path, unknown[0]), "is not a field of this schema")
        missing = [k for k in keys if k not in value]
        if missing:
            raise SchemaError(_join(path, missing[0]), "is required")
    return value


def _list(value: Any, path: str, low: int = 0, high: int | None = None) -> list[Any]:
    if not isinstance(value, list):
        raise SchemaError(path, f"must be an array, got {_kind(value)}")
    if len(value) < low or (high is not None and len(value) > high):
        bound = f"{low} to {high}" if high is not None else f"at least {low}"
        raise SchemaError(path, f"must have {bound} items, got {len(value)}")
    return value


def _int(value: Any, path: str, low: int = 0, high: int = MAX_INT) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError(path, f"must be an integer, got {_kind(value)}")
    if not low <= value <= high:
        raise SchemaError(path, f"must be an integer from {low} to {high}, got {excerpt(str(value), 24)}")
    return value


def _number(value: Any, path: str, low: float | None = 0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SchemaError(path, f"must be a finite number, got {_kind(value)}")
    if low is not None and value < low:
        raise SchemaError(path, f"must be at least {low}, got {value}")
    return value


def _prob(value: Any, path: str) -> float:
    _number(value, path, 0)
    if value > 1:
        raise SchemaError(path, f"must be a probability from 0 to 1, got {value}")
    return value


def _str(value: Any, path: str, low: int = 0, high: int | None = None) -> str:
    if not isinstance(value, str):
        raise SchemaError(path, f"must be a string, got {_kind(value)}")
    if len(value) < low or (high is not None and len(value) > high):
        most = high if high is not None else "any number of"
        raise SchemaError(path, f"must be {low} to {most} characters, got {len(value)}")
    return value


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(path, f"must be true or false, got {_kind(value)}")
    return value


def _choice(value: Any, path: str, allowed: tuple[Any, ...]) -> Any:
    if isinstance(value, bool) or value not in allowed:
        names = ", ".join(repr(a) if a is not None else "null" for a in allowed)
        raise SchemaError(path, f"must be one of {names}, got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    """A value a file gave, quoted briefly in a message."""
    if isinstance(value, str):
        return excerpt(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return excerpt(str(value), 24)
    return _kind(value)


def _optional(check: Check) -> Check:
    return lambda value, path: None if value is None else check(value, path)


def _text(low: int = 0, high: int | None = None) -> Check:
    return lambda value, path: _str(value, path, low, high)


def _run_id(value: Any, path: str) -> str:
    _str(value, path, 1, 43)
    if not RUN_ID.fullmatch(value):
        raise SchemaError(path, f"must be a run id (16 to 43 characters of A–Z a–z 0–9 _ -), got {excerpt(value)}")
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# The flat parts: export key, ``Run`` field, check on import, conversion on export.


@dataclass(frozen=True)
class Field:
    key: str
    attr: str
    check: Check
    export: Callable[[Any], Any] = lambda value: value


def _usage(value: Any, path: str) -> dict[str, Any]:
    for key, count in _object(value, path).items():
        _optional(_int)(count, f"{path}.{key}")
    return value


def _timing(value: Any, path: str) -> dict[str, Any]:
    for key, seconds in _object(value, path).items():
        _optional(_number)(seconds, f"{path}.{key}")
    return value


def _samples(value: Any, path: str) -> list[Any]:
    for i, sample in enumerate(_list(value, path, 0, 64)):
        p = f"{path}[{i}]"
        _object(sample, p, SAMPLE_KEYS)
        _int(sample["sample"], f"{p}.sample")
        _choice(sample["reason"], f"{p}.reason", ("eos", "stop", "max_tokens", "cancelled"))
        _optional(_str)(sample["stop_string"], f"{p}.stop_string")
        _str(sample["text"], f"{p}.text")
        _str(sample["tail"], f"{p}.tail")
        _int(sample["completion_tokens"], f"{p}.completion_tokens")
    return value


def _beams(value: Any, path: str) -> list[Any]:
    for i, beam in enumerate(_list(value, path, 0, 64)):
        p = f"{path}[{i}]"
        _object(beam, p, BEAM_KEYS)
        for j, token in enumerate(_list(beam["token_ids"], f"{p}.token_ids", 0, MAX_TOKENS_PER_RUN)):
            _int(token, f"{p}.token_ids[{j}]")
        _number(beam["cum_logprob"], f"{p}.cum_logprob", None)
        _number(beam["score"], f"{p}.score", None)
        _choice(beam["reason"], f"{p}.reason", ("eos", "max_tokens", "cancelled"))
    return value


def _error(value: Any, path: str) -> dict[str, Any]:
    _object(value, path, ERROR_KEYS)
    _str(value["code"], f"{path}.code", 1, 64)
    _str(value["message"], f"{path}.message", 0, 10_000)
    _optional(_str)(value["param"], f"{path}.param")
    return value


MODEL_FIELDS = (
    Field("name", "model_name", _text(1, 200)),
    Field("manifest_sha256", "manifest_sha256", _text(0, 64)),
    Field("execution_provider", "execution_provider", _text(0, 80)),
    Field("onnxruntime_version", "onnxruntime_version", _text(0, 40)),
    Field("context_window", "context_window", _optional(lambda v, p: _int(v, p, 1))),
)
RESULT_FIELDS = (
    Field("reason", "reason", lambda v, p: v or "", export=lambda v: v or None),  # checked with status
    Field("stop_string", "stop_string", _optional(_str)),
    Field("text", "text", _str),
    Field("tail", "tail", _str),
    Field("usage", "usage", _usage),
    Field("timing", "timing", _timing),
    Field("samples", "samples", _samples),
    Field("beams", "beams", _beams),
    Field("error", "error", _optional(_error)),
)


# Export.


def run_to_dict(run: Run) -> dict[str, Any]:
    """The run's full record, in the export's shape (``RUN_KEYS``)."""
    return {
        "id": run.id,
        "created_at": run.created_at.isoformat(),
        "status": run.status,
        "source": run.source,
        "imported_from": run.imported_from or None,
        "parent_run": run.parent_id,
        "branch_index": run.branch_index,
        "request": {
            "prompt": run.prompt,
            "mode": run.mode,
            "system": run.system,
            "messages": messages_from_stored(run.messages),
            "continue_final_message": run.continue_final_message,
            "params": run.params,
            "seed": int(run.seed),
            "top_n": run.top_n,
            "use_cache": run.use_cache,
            "prefix_tokens": run.prefix_tokens,
        },
        "prompt_tokens": [{"id": token_id, "text": text} for token_id, text in run.prompt_tokens],
        "model": {f.key: f.export(getattr(run, f.attr)) for f in MODEL_FIELDS},
        "result": {f.key: f.export(getattr(run, f.attr)) for f in RESULT_FIELDS},
        "tokens": [TokenRow.from_stored(row).to_event() for row in run.tokens],
        "beam_steps": run.beam_steps,
    }


def run_export(run: Run) -> dict[str, Any]:
    return {"schema": RUN_SCHEMA, "version": VERSION, "run": run_to_dict(run)}


def comparison_export(runs: list[Run], comparison: dict[str, Any]) -> dict[str, Any]:
    """``comparison`` is derived from the runs and ignored on import."""
    return {
        "schema": COMPARISON_SCHEMA,
        "version": VERSION,
        "runs": [run_to_dict(r) for r in runs],
        "comparison": comparison,
    }


# Import.


@dataclass(frozen=True)
class ImportedRun:
    """A validated run record, ready to become a new ``Run`` (with a new id)."""

    fields: dict[str, Any]
    original_id: str | None
    parent_run: str | None


def parse_export(data: Any) -> list[ImportedRun]:
    """Either kind of export file, told apart by its ``schema``; any readable version."""
    if not isinstance(data, dict):
        raise SchemaError("(file)", f"must be a JSON object, got {_kind(data)}")
    found = first_unencodable(data)
    if found is not None:
        raise SchemaError(*found)
    if data.get("schema") == COMPARISON_SCHEMA:
        return parse_comparison_export(data)
    return [parse_run_export(data)]


def parse_run_export(data: Any) -> ImportedRun:
    version = _header(data, RUN_SCHEMA, ("schema", "version", "run"))
    return _run(_upgraded(data["run"], version, "run"), "run")


def parse_comparison_export(data: Any) -> list[ImportedRun]:
    version = _header(data, COMPARISON_SCHEMA, ("schema", "version", "runs", "comparison"))
    runs = _list(data["runs"], "runs", 2, MAX_COMPARED)
    return [_run(_upgraded(r, version, f"runs[{i}]"), f"runs[{i}]") for i, r in enumerate(runs)]


def _header(data: Any, schema: str, keys: tuple[str, ...]) -> int:
    if not isinstance(data, dict):
        raise SchemaError("(file)", f"must be a JSON object, got {_kind(data)}")
    if data.get("schema") != schema:
        _choice(data.get("schema"), "schema", (RUN_SCHEMA, COMPARISON_SCHEMA))
    version = data.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        readable = ", ".join(map(str, READABLE_VERSIONS))
        raise SchemaError("version", f"this server reads versions {readable}, got {_shown(version)}")
    _object(data, "", keys)
    return version


def _upgraded(run: Any, version: int, path: str) -> Any:
    if version == 1:
        run = _upgrade_v1(run, path)
    return _upgrade_v2(run, path) if version <= 2 else run


def _upgrade_v2(run: Any, path: str) -> Any:
    """A version 2 run as version 3: asked with ``prompt`` (and ``system``), no conversation."""
    if not isinstance(run, dict) or not isinstance(run.get("request"), dict):
        return run
    for key in CONVERSATION_KEYS:
        if key in run["request"]:
            raise SchemaError(f"{path}.request.{key}", "is not a field of versions 1 and 2 (it is of version 3)")
    return run | {"request": run["request"] | {"messages": None, "continue_final_message": False}}


def _upgrade_v1(run: Any, path: str) -> Any:
    """A version 1 run with what version 1 could leave out filled in with its defaults."""
    if not isinstance(run, dict):
        return run
    run = {
        "id": None,
        "created_at": None,
        "source": "live",
        "imported_from": None,
        "parent_run": None,
        "branch_index": None,
        "tokens": [],
        "beam_steps": [],
    } | run
    if isinstance(run.get("result"), dict):
        run["result"] = {
            "reason": None,
            "stop_string": None,
            "text": "",
            "tail": "",
            "usage": {},
            "timing": {},
            "samples": [],
            "beams": [],
            "error": None,
        } | run["result"]
    if isinstance(run["tokens"], list):
        run["tokens"] = [_upgrade_v1_token(t) for t in run["tokens"]]
    if isinstance(run["beam_steps"], list):
        run["beam_steps"] = [
            {"beams": [], "pruned": [], "finished": [], "elapsed_ms": None} | s if isinstance(s, dict) else s
            for s in run["beam_steps"]
        ]
    return run


def _upgrade_v1_token(token: Any) -> Any:
    if not isinstance(token, dict):
        return token
    token = {
        "sample": 0,
        "removed_by": None,
        "forced": False,
        "draw": None,
        "entropy": {"before": None, "after": None},
        "stages": [],
        "elapsed_ms": None,
    } | token
    if isinstance(token.get("alternatives"), list):
        token["alternatives"] = [{"removed_by": None} | a if isinstance(a, dict) else a for a in token["alternatives"]]
    return token


def _run(data: Any, path: str) -> ImportedRun:
    _object(data, path, RUN_KEYS)
    status = _choice(data["status"], f"{path}.status", tuple(s.value for s in Run.Status))
    _choice(data["source"], f"{path}.source", tuple(s.value for s in Run.Source))
    original = _optional(_run_id)(data["id"], f"{path}.id")
    _optional(_run_id)(data["imported_from"], f"{path}.imported_from")
    parent = _optional(_run_id)(data["parent_run"], f"{path}.parent_run")
    branch_index = _optional(_int)(data["branch_index"], f"{path}.branch_index")
    created_at = _created_at(data["created_at"], f"{path}.created_at")

    request = _object(data["request"], f"{path}.request", REQUEST_KEYS)
    seed = _int(request["seed"], f"{path}.request.seed", 0, MAX_SEED)
    parsed = _generate_request(request, f"{path}.request")
    if not isinstance(request["params"], dict) or request["params"].get("seed") != seed:
        raise SchemaError(f"{path}.request.params.seed", f"must equal request.seed ({seed})")

    prompt_rows = []
    for i, token in enumerate(_list(data["prompt_tokens"], f"{path}.prompt_tokens", 1, MAX_TOKENS_PER_RUN)):
        p = f"{path}.prompt_tokens[{i}]"
        _object(token, p, PROMPT_TOKEN_KEYS)
        prompt_rows.append([_int(token["id"], f"{p}.id"), _str(token["text"], f"{p}.text")])

    model = _object(data["model"], f"{path}.model", tuple(f.key for f in MODEL_FIELDS))
    result = _object(data["result"], f"{path}.result", tuple(f.key for f in RESULT_FIELDS))
    reason = _choice(result["reason"], f"{path}.result.reason", REASONS[status])
    if (status == "failed") != (result["error"] is not None):
        raise SchemaError(f"{path}.result.error", 'must be an object when status is "failed", null otherwise')

    tokens = _list(data["tokens"], f"{path}.tokens", 0, MAX_TOKENS_PER_RUN)
    rows = [_token(t, f"{path}.tokens[{i}]", parsed.top_n, parsed.loop.n).to_stored() for i, t in enumerate(tokens)]
    beam_steps = _list(data["beam_steps"], f"{path}.beam_steps", 0, MAX_TOKENS_PER_RUN)
    for i, step in enumerate(beam_steps):
        _beam_step(step, f"{path}.beam_steps[{i}]")

    fields = {
        "status": status,
        "created_at": created_at,
        "prompt": request["prompt"] if parsed.chat is not None else parsed.prompt,
        "mode": parsed.mode,
        "system": parsed.system,
        "messages": None if parsed.chat is None else stored_messages(parsed.chat.to_list()),
        "continue_final_message": parsed.chat is not None and parsed.chat.continue_final_message,
        "prompt_tokens": prompt_rows,
        "params": parsed.params_dict(),  # normalized, as live runs store them
        "seed": seed,
        "top_n": parsed.top_n,
        "use_cache": parsed.use_cache,
        "prefix_tokens": list(parsed.prefix_tokens),
        "branch_index": branch_index,
        **{f.attr: f.check(model[f.key], f"{path}.model.{f.key}") for f in MODEL_FIELDS},
        **{f.attr: f.check(result[f.key], f"{path}.result.{f.key}") for f in RESULT_FIELDS},
        "reason": reason or "",
        "tokens": rows,
        "beam_steps": beam_steps,
    }
    return ImportedRun(fields, original, parent)


def _generate_request(request: dict[str, Any], path: str) -> GenerationRequest:
    """The export's request as the ``generate`` frame a replay sends, parsed by the websocket's own
    parser: ``prompt`` (and ``system``), or the conversation in ``messages`` (see the module's
    docstring for the rules of the two)."""
    continued = _bool(request["continue_final_message"], f"{path}.continue_final_message")
    skipped = {"seed", "messages", "continue_final_message"}
    if request["messages"] is None:
        if continued:
            raise SchemaError(f"{path}.continue_final_message", "must be false when messages is null")
    else:
        _list(request["messages"], f"{path}.messages", 1)
        if request["system"] is not None:
            raise SchemaError(f"{path}.system", "must be null when messages is given (a system message is a turn)")
        if request["prompt"] is None:
            raise SchemaError(f"{path}.prompt", "is required (the last user message's text when messages is given)")
        skipped |= {"prompt", "system"}
    generate = {k: v for k, v in request.items() if k not in skipped and v is not None}
    if request["messages"] is not None:
        generate |= {"messages": request["messages"], "continue_final_message": continued}
    try:
        parsed = protocol.parse_generate(generate)  # what a replay will send must be a valid request
    except protocol.ProtocolError as error:
        param = re.sub(r"\.(\d+)", r"[\1]", error.param) if error.param else None  # messages.1.role → messages[1].role
        raise SchemaError(f"{path}.{param}" if param else path, error.message) from None
    if parsed.chat is not None:
        expected = shown_prompt(parsed.chat.to_list())
        if request["prompt"] != expected:
            raise SchemaError(
                f"{path}.prompt", f"must be the last user message's text when messages is given ({_shown(expected)})"
            )
    return parsed


def _created_at(value: Any, path: str) -> datetime:
    """When the run was generated: kept by an import (a version 1 file without it: now)."""
    if value is None:
        return timezone.now()
    text = _str(value, path, 1, 64)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SchemaError(path, f"must be an ISO 8601 date and time, got {excerpt(text)}") from None
    if moment.tzinfo is None:
        raise SchemaError(path, "must give its UTC offset (e.g. +00:00)")
    return moment


def _token(data: Any, path: str, top_n: int, samples: int) -> TokenRow:
    _object(data, path, TokenRow.EVENT_KEYS)
    _int(data["sample"], f"{path}.sample", 0, samples - 1)
    _int(data["index"], f"{path}.index")
    _int(data["id"], f"{path}.id")
    _str(data["token"], f"{path}.token")
    _str(data["text"], f"{path}.text")
    _prob(data["raw_prob"], f"{path}.raw_prob")
    _prob(data["prob"], f"{path}.prob")
    _optional(_str)(data["removed_by"], f"{path}.removed_by")
    _bool(data["forced"], f"{path}.forced")
    _optional(_prob)(data["draw"], f"{path}.draw")
    _optional(_number)(data["elapsed_ms"], f"{path}.elapsed_ms")
    entropy = _object(data["entropy"], f"{path}.entropy", ("before", "after"))
    for key in ("before", "after"):
        _optional(_number)(entropy[key], f"{path}.entropy.{key}")
    for i, stage in enumerate(_list(data["stages"], f"{path}.stages", 0, 64)):
        p = f"{path}.stages[{i}]"
        _object(stage, p, tuple(sorted(Stage.EVENT_KEYS)))
        _str(stage["name"], f"{p}.name", 1, 64)
        _int(stage["kept"], f"{p}.kept")
    for i, alt in enumerate(_list(data["alternatives"], f"{path}.alternatives", 0, top_n)):
        p = f"{path}.alternatives[{i}]"
        _object(alt, p, tuple(sorted(Alternative.EVENT_KEYS)))
        _int(alt["id"], f"{p}.id")
        _str(alt["token"], f"{p}.token")
        _prob(alt["raw_prob"], f"{p}.raw_prob")
        _prob(alt["prob"], f"{p}.prob")
        _optional(_str)(alt["removed_by"], f"{p}.removed_by")
    return TokenRow.from_event(data)


def _beam_step(data: Any, path: str) -> None:
    _object(data, path, BEAM_STEP_KEYS)
    _int(data["index"], f"{path}.index")
    _optional(_number)(data["elapsed_ms"], f"{path}.elapsed_ms")
    for key in ("beams", "pruned", "finished"):
        for i, proposal in enumerate(_list(data[key], f"{path}.{key}", 0, 1024)):
            p = f"{path}.{key}[{i}]"
            _object(proposal, p, PROPOSAL_KEYS)
            _int(proposal["parent"], f"{p}.parent")
            _int(proposal["id"], f"{p}.id")
            _str(proposal["token"], f"{p}.token")
            _number(proposal["logprob"], f"{p}.logprob", None)
            _number(proposal["cum_logprob"], f"{p}.cum_logprob", None)
