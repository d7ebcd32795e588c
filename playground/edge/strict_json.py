"""Strict JSON for client text (docs/websocket-api.md, *Errors*): ``parse_json`` reads a frame or
an HTTP body as JSON where NaN and Infinity are not numbers and a number too long to be one is
refused, and no nesting depth can break the reader.

No field of a frame or of an HTTP body holds more than a few levels (the deepest, an ``inspect``
variant's ``logit_bias``, is three below the frame), but Python's JSON reader, ``repr`` and ``==``
recurse, and a value nested some hundreds deep raises ``RecursionError`` wherever it is touched.
So the text is read in two steps: ``shallow`` first cuts every value that opens deeper than
``MAX_DEPTH`` out of the text, leaving ``CUT`` in its place, before the JSON reader sees it; then
``too_deep`` names the field where a cut (or, in a message built in code, a container below
``MAX_DEPTH``) is, so the frame's parser refuses it by name, with its request id, like any other
bad value. Both are loops over the text or the value, so no nesting depth can break them.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from typing import Any

MAX_DEPTH = 16  # containers inside the outermost one: far more than any field holds
CODE = "nested_too_deep"
# Put where a value nesting deeper than MAX_DEPTH was cut out: a string no client sends (random per process).
CUT = f"(nested deeper than {MAX_DEPTH} levels: {secrets.token_hex(8)})"
# A JSON string (skipped whole, escapes included) or one bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def shallow(text: str | bytes) -> str:
    """``text`` with each value that opens more than ``MAX_DEPTH`` containers deep replaced by the
    JSON string ``CUT``. Bytes are decoded as ``json.loads`` decodes them (UTF-8, -16 or -32)."""
    if isinstance(text, bytes):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    if text.count("[") + text.count("{") <= MAX_DEPTH + 1:
        return text  # (most frames) too few brackets to nest too deep
    pieces: list[str] = []
    depth = 0
    kept_from = 0  # where the text still to be kept starts
    cut_from: int | None = None  # where the value being cut out opened
    for match in _TOKENS.finditer(text):
        mark = match.group()
        if mark[0] == '"':
            continue
        if mark in "[{":
            depth += 1
            if depth == MAX_DEPTH + 2 and cut_from is None:
                cut_from = match.start()
        else:
            if depth == MAX_DEPTH + 2 and cut_from is not None:
                pieces += [text[kept_from:cut_from], json.dumps(CUT)]
                kept_from, cut_from = match.end(), None
            depth -= 1
    pieces.append(text[kept_from:])
    return "".join(pieces)


def too_deep(message: Any) -> str | None:
    """The path of the first field (``params.stop``, ``messages``: the field, not the whole path)
    that holds ``CUT`` or a container more than ``MAX_DEPTH`` levels inside ``message`` ("" when
    ``message`` is itself ``CUT``); None when nothing nests that deep."""
    pending: list[tuple[tuple[str, ...], Any]] = [((), message)]
    while pending:
        path, value = pending.pop()
        if (isinstance(value, str) and value == CUT) or (isinstance(value, dict | list) and len(path) > MAX_DEPTH):
            return ".".join(path[:2] if path[0] == "params" else path[:1]) if path else ""
        if isinstance(value, dict):
            pending.extend(((*path, str(key)), item) for key, item in value.items())
        elif isinstance(value, list):
            pending.extend(((*path, str(i)), item) for i, item in enumerate(value))
    return None


def message(field: str | None) -> str:
    where = field or "the frame"
    return f"{where} nests values more than {MAX_DEPTH} levels deep; no field holds that many"


def parse_json(text: str | bytes) -> Any:
    """Strict JSON: NaN and Infinity are not numbers, and a number too long to be one is refused.

    Raises ``ValueError`` (``json.JSONDecodeError`` included) for anything that is not such JSON.
    """
    try:
        return json.loads(shallow(text), parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]}… is too large")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 40:  # far beyond any field's range (seeds are below 2**63)
        raise ValueError(f"the number {text[:20]}… has too many digits")
    return int(text)
