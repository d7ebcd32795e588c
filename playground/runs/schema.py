"""The versioned JSON export of a run or a comparison, and the validating import (docs/runs.md).

A stored run keeps its tokens compactly (``TOKEN_FIELDS`` rows). The export expands each token to
the shape of the websocket ``token`` event (without ``type`` and ``request_id``), so a page can
draw a saved run with the same code that draws a live one.

``parse_run_export`` / ``parse_comparison_export`` check every field of an uploaded file and raise
``SchemaError`` naming the first bad field by its path (``run.tokens[3].alternatives[0].prob``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from inference.sampling.params import MAX_SEED
from playground import protocol
from playground.models import Run

RUN_SCHEMA = "token-playground.run"
COMPARISON_SCHEMA = "token-playground.comparison"
VERSION = 1
MAX_TOKENS_PER_RUN = 200_000
MAX_COMPARED = 4

# A stored token row: [sample, index, id, token, text, raw_prob, prob, draw, entropy_before,
# entropy_after, elapsed_ms, alternatives, stages(, extra)], alternatives as [id, token, raw_prob,
# prob, removed_by(, extra)] rows and stages as [name, kept] rows; ``extra`` (only when present) is
# an object of the event's other fields, e.g. ``forced``.
TOKEN_FIELDS = (
    "sample", "index", "id", "token", "text", "raw_prob", "prob", "draw",
    "entropy_before", "entropy_after", "elapsed_ms", "alternatives", "stages",
)


# Compact rows ↔ token events.


TOKEN_KEYS = frozenset({
    "sample", "index", "id", "token", "text", "raw_prob", "prob", "draw", "entropy", "elapsed_ms",
    "alternatives", "stages", "type", "request_id",
})
ALTERNATIVE_KEYS = frozenset({"id", "token", "raw_prob", "prob", "removed_by"})


def compact_token(event: dict[str, Any]) -> list[Any]:
    """A ``token`` event (or an exported token) as a stored row. Fields the row has no column for
    (``forced``, and any the protocol adds later) are kept in a trailing object: nothing is lost."""
    entropy = event.get("entropy") or {}
    row = [
        event.get("sample", 0), event["index"], event["id"], event["token"], event["text"],
        event["raw_prob"], event["prob"], event.get("draw"), entropy.get("before"), entropy.get("after"),
        event.get("elapsed_ms"),
        [_compact_alternative(a) for a in event["alternatives"]],
        [[s["name"], s["kept"]] for s in event.get("stages", [])],
    ]
    extra = {k: v for k, v in event.items() if k not in TOKEN_KEYS}
    if extra:
        row.append(extra)
    return row


def _compact_alternative(a: dict[str, Any]) -> list[Any]:
    row = [a["id"], a["token"], a["raw_prob"], a["prob"], a.get("removed_by")]
    extra = {k: v for k, v in a.items() if k not in ALTERNATIVE_KEYS}
    if extra:
        row.append(extra)
    return row


def expand_token(row: list[Any]) -> dict[str, Any]:
    (sample, index, token_id, token, text, raw_prob, prob, draw, before, after, elapsed, alts, stages) = row[:13]
    extra = row[13] if len(row) > 13 else {}
    return {
        "sample": sample, "index": index, "id": token_id, "token": token, "text": text,
        "raw_prob": raw_prob, "prob": prob,
        "alternatives": [
            {"id": a[0], "token": a[1], "raw_prob": a[2], "prob": a[3], "removed_by": a[4], **(a[5] if len(a) > 5 else {})}
            for a in alts
        ],
        **extra,
        "draw": draw,
        "entropy": {"before": before, "after": after},
        "stages": [{"name": s[0], "kept": s[1]} for s in stages],
        "elapsed_ms": elapsed,
    }


# Export.


def run_to_dict(run: Run) -> dict[str, Any]:
    """The run's full record, in the export's shape."""
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
            "params": run.params,
            "seed": int(run.seed),
            "top_n": run.top_n,
            "use_cache": run.use_cache,
            "prefix_tokens": run.prefix_tokens,
        },
        "prompt_tokens": [{"id": i, "text": t} for i, t in run.prompt_tokens],
        "model": {
            "name": run.model_name,
            "manifest_sha256": run.manifest_sha256,
            "execution_provider": run.execution_provider,
            "onnxruntime_version": run.onnxruntime_version,
            "context_window": run.context_window,
        },
        "result": {
            "reason": run.reason or None,
            "stop_string": run.stop_string,
            "text": run.text,
            "tail": run.tail,
            "usage": run.usage,
            "timing": run.timing,
            "samples": run.samples,
            "beams": run.beams,
            "error": run.error,
        },
        "tokens": [expand_token(row) for row in run.tokens],
        "beam_steps": run.beam_steps,
    }


def run_export(run: Run) -> dict[str, Any]:
    return {"schema": RUN_SCHEMA, "version": VERSION, "run": run_to_dict(run)}


def comparison_export(runs: list[Run], comparison: dict[str, Any]) -> dict[str, Any]:
    """``comparison`` is derived from the runs and ignored on import."""
    return {
        "schema": COMPARISON_SCHEMA, "version": VERSION,
        "runs": [run_to_dict(r) for r in runs], "comparison": comparison,
    }


# Import.


class SchemaError(ValueError):
    """An import file that does not follow the schema; ``field`` is the dotted path of the problem."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        return {"code": "invalid_export", "field": self.field, "message": self.message}


@dataclass(frozen=True)
class ImportedRun:
    """A validated run record, ready to become a new ``Run`` (with a new id)."""

    fields: dict[str, Any]
    original_id: str | None
    parent_run: str | None


def parse_run_export(data: Any) -> ImportedRun:
    _header(data, RUN_SCHEMA, {"schema", "version", "run"})
    return _run(data["run"], "run")


def parse_comparison_export(data: Any) -> list[ImportedRun]:
    _header(data, COMPARISON_SCHEMA, {"schema", "version", "runs", "comparison"})
    runs = _list(data.get("runs"), "runs", 2, MAX_COMPARED)
    return [_run(r, f"runs[{i}]") for i, r in enumerate(runs)]


def parse_export(data: Any) -> list[ImportedRun]:
    """Either kind of export file, told apart by its ``schema``."""
    if isinstance(data, dict) and data.get("schema") == COMPARISON_SCHEMA:
        return parse_comparison_export(data)
    return [parse_run_export(data)]


def _header(data: Any, schema: str, keys: set[str]) -> None:
    if not isinstance(data, dict):
        raise SchemaError("(file)", f"must be a JSON object, got {_kind(data)}")
    if data.get("schema") not in (RUN_SCHEMA, COMPARISON_SCHEMA):
        raise SchemaError("schema", f"must be {RUN_SCHEMA!r} or {COMPARISON_SCHEMA!r}, got {data.get('schema')!r}")
    version = data.get("version")
    if version != VERSION or isinstance(version, bool):
        raise SchemaError("version", f"this server reads version {VERSION}, got {version!r}")
    _known(data, keys, "")


def _run(data: Any, path: str) -> ImportedRun:
    _object(data, path)
    _known(data, {
        "id", "created_at", "status", "source", "imported_from", "parent_run", "branch_index",
        "request", "prompt_tokens", "model", "result", "tokens", "beam_steps",
    }, path)
    status = _choice(data.get("status"), f"{path}.status", [s.value for s in Run.Status])
    request = _object(data.get("request"), f"{path}.request")
    _known(request, {"prompt", "mode", "system", "params", "seed", "top_n", "use_cache", "prefix_tokens"}, f"{path}.request")
    generate = {k: v for k, v in request.items() if k != "seed" and v is not None}
    seed = _int(request.get("seed"), f"{path}.request.seed", 0, MAX_SEED)
    try:
        parsed = protocol.parse_generate(generate)
    except protocol.ProtocolError as error:
        field = f"{path}.request.{error.param}" if error.param else f"{path}.request"
        raise SchemaError(field, error.message) from None
    params = request.get("params")
    if not isinstance(params, dict) or params.get("seed") != seed:
        raise SchemaError(f"{path}.request.params.seed", f"must equal request.seed ({seed})")

    prompt_tokens = _list(data.get("prompt_tokens"), f"{path}.prompt_tokens", 1, None)
    prompt_rows = []
    for i, token in enumerate(prompt_tokens):
        p = f"{path}.prompt_tokens[{i}]"
        _object(token, p)
        _known(token, {"id", "text"}, p)
        prompt_rows.append([_int(token.get("id"), f"{p}.id", 0, None), _str(token.get("text"), f"{p}.text")])

    model = _object(data.get("model"), f"{path}.model")
    _known(model, {"name", "manifest_sha256", "execution_provider", "onnxruntime_version", "context_window"}, f"{path}.model")
    result = _object(data.get("result"), f"{path}.result")
    _known(result, {"reason", "stop_string", "text", "tail", "usage", "timing", "samples", "beams", "error"}, f"{path}.result")
    reasons = {"complete": ["eos", "stop", "max_tokens"], "cancelled": ["cancelled"], "failed": [None]}[status]
    reason = _choice(result.get("reason"), f"{path}.result.reason", reasons)
    if status == "failed":
        _object(result.get("error"), f"{path}.result.error")
    elif result.get("error") is not None:
        raise SchemaError(f"{path}.result.error", f"must be null unless status is \"failed\"")

    tokens = _list(data.get("tokens", []), f"{path}.tokens", 0, MAX_TOKENS_PER_RUN)
    rows = [compact_token(_token(t, f"{path}.tokens[{i}]", parsed.top_n)) for i, t in enumerate(tokens)]
    beam_steps = _list(data.get("beam_steps", []), f"{path}.beam_steps", 0, MAX_TOKENS_PER_RUN)
    for i, step in enumerate(beam_steps):
        _beam_step(step, f"{path}.beam_steps[{i}]")

    parent = data.get("parent_run")
    if parent is not None:
        _str(parent, f"{path}.parent_run", 1, 43)
    branch_index = data.get("branch_index")
    if branch_index is not None:
        _int(branch_index, f"{path}.branch_index", 0, None)
    original = data.get("id")
    if original is not None:
        _str(original, f"{path}.id", 1, 43)

    fields = {
        "status": status,
        "prompt": parsed.prompt,
        "mode": parsed.mode,
        "system": parsed.system,
        "prompt_tokens": prompt_rows,
        "params": parsed.params_dict(),  # normalized, as live runs store them
        "seed": seed,
        "top_n": parsed.top_n,
        "use_cache": parsed.use_cache,
        "prefix_tokens": list(parsed.prefix_tokens),
        "branch_index": branch_index,
        "model_name": _str(model.get("name"), f"{path}.model.name", 1, 200),
        "manifest_sha256": _str(model.get("manifest_sha256"), f"{path}.model.manifest_sha256", 0, 64),
        "execution_provider": _str(model.get("execution_provider"), f"{path}.model.execution_provider", 0, 80),
        "onnxruntime_version": _str(model.get("onnxruntime_version"), f"{path}.model.onnxruntime_version", 0, 40),
        "context_window": _optional_int(model.get("context_window"), f"{path}.model.context_window", 1, None),
        "reason": reason or "",
        "stop_string": _optional_str(result.get("stop_string"), f"{path}.result.stop_string"),
        "text": _str(result.get("text", ""), f"{path}.result.text"),
        "tail": _str(result.get("tail", ""), f"{path}.result.tail"),
        "usage": _object(result.get("usage", {}), f"{path}.result.usage"),
        "timing": _timing(result.get("timing", {}), f"{path}.result.timing"),
        "samples": _list(result.get("samples", []), f"{path}.result.samples", 0, None),
        "beams": _list(result.get("beams", []), f"{path}.result.beams", 0, None),
        "error": result.get("error"),
        "tokens": rows,
        "beam_steps": beam_steps,
    }
    return ImportedRun(fields, original, parent)


def _token(data: Any, path: str, top_n: int) -> dict[str, Any]:
    _object(data, path)
    _known(data, {"sample", "index", "id", "token", "text", "raw_prob", "prob", "alternatives",
                  "draw", "entropy", "stages", "elapsed_ms", "forced"}, path)
    if data.get("forced") is not None and not isinstance(data["forced"], bool):
        raise SchemaError(f"{path}.forced", f"must be true or false, got {_kind(data['forced'])}")
    _int(data.get("sample", 0), f"{path}.sample", 0, None)
    _int(data.get("index"), f"{path}.index", 0, None)
    _int(data.get("id"), f"{path}.id", 0, None)
    _str(data.get("token"), f"{path}.token")
    _str(data.get("text"), f"{path}.text")
    _prob(data.get("raw_prob"), f"{path}.raw_prob")
    _prob(data.get("prob"), f"{path}.prob")
    if data.get("draw") is not None:
        _prob(data["draw"], f"{path}.draw")
    if data.get("elapsed_ms") is not None:
        _number(data["elapsed_ms"], f"{path}.elapsed_ms", 0)
    entropy = data.get("entropy")
    if entropy is not None:
        _object(entropy, f"{path}.entropy")
        _known(entropy, {"before", "after"}, f"{path}.entropy")
        for key in ("before", "after"):
            if entropy.get(key) is not None:
                _number(entropy[key], f"{path}.entropy.{key}", 0)
    for i, stage in enumerate(_list(data.get("stages", []), f"{path}.stages", 0, 64)):
        p = f"{path}.stages[{i}]"
        _object(stage, p)
        _known(stage, {"name", "kept"}, p)
        _str(stage.get("name"), f"{p}.name", 1, 64)
        _int(stage.get("kept"), f"{p}.kept", 0, None)
    for i, alt in enumerate(_list(data.get("alternatives"), f"{path}.alternatives", 0, top_n)):
        p = f"{path}.alternatives[{i}]"
        _object(alt, p)
        _known(alt, {"id", "token", "raw_prob", "prob", "removed_by"}, p)
        _int(alt.get("id"), f"{p}.id", 0, None)
        _str(alt.get("token"), f"{p}.token")
        _prob(alt.get("raw_prob"), f"{p}.raw_prob")
        _prob(alt.get("prob"), f"{p}.prob")
        _optional_str(alt.get("removed_by"), f"{p}.removed_by")
    return data


def _beam_step(data: Any, path: str) -> None:
    _object(data, path)
    _known(data, {"index", "beams", "pruned", "finished", "elapsed_ms"}, path)
    _int(data.get("index"), f"{path}.index", 0, None)
    for key in ("beams", "pruned", "finished"):
        for i, p in enumerate(_list(data.get(key, []), f"{path}.{key}", 0, None)):
            q = f"{path}.{key}[{i}]"
            _object(p, q)
            _known(p, {"parent", "id", "token", "logprob", "cum_logprob"}, q)
            _int(p.get("parent"), f"{q}.parent", 0, None)
            _int(p.get("id"), f"{q}.id", 0, None)
            _str(p.get("token"), f"{q}.token")
            _number(p.get("logprob"), f"{q}.logprob", None)
            _number(p.get("cum_logprob"), f"{q}.cum_logprob", None)


def _timing(data: Any, path: str) -> dict[str, Any]:
    _object(data, path)
    for key, value in data.items():
        if value is not None:
            _number(value, f"{path}.{key}", 0)
    return data


# Field checks: each returns the value or raises SchemaError naming the path.


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaError(path, f"must be an object, got {_kind(value)}")
    return value


def _known(value: dict[str, Any], keys: set[str], path: str) -> None:
    unknown = sorted(set(value) - keys)
    if unknown:
        where = f"{path}.{unknown[0]}" if path else unknown[0]
        raise SchemaError(where, "is not a field of this schema")


def _list(value: Any, path: str, low: int, high: int | None) -> list[Any]:
    if not isinstance(value, list):
        raise SchemaError(path, f"must be an array, got {_kind(value)}")
    if len(value) < low or (high is not None and len(value) > high):
        bound = f"{low} to {high}" if high is not None else f"at least {low}"
        raise SchemaError(path, f"must have {bound} items, got {len(value)}")
    return value


def _int(value: Any, path: str, low: int | None, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError(path, f"must be an integer, got {_kind(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise SchemaError(path, f"must be from {low} to {high if high is not None else '∞'}, got {value}")
    return value


def _optional_int(value: Any, path: str, low: int | None, high: int | None) -> int | None:
    return None if value is None else _int(value, path, low, high)


def _number(value: Any, path: str, low: float | None) -> float:
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
        raise SchemaError(path, f"must be {low} to {high if high is not None else 'any number of'} characters, got {len(value)}")
    return value


def _optional_str(value: Any, path: str) -> str | None:
    return None if value is None else _str(value, path)


def _choice(value: Any, path: str, allowed: list[Any]) -> Any:
    if value not in allowed or isinstance(value, bool):
        raise SchemaError(path, f"must be one of {', '.join(repr(a) if a is not None else 'null' for a in allowed)}, got {value!r}")
    return value

