"""Checks of the values of an uploaded export: each returns the value or raises ``SchemaError``
(an ``inference.errors.FieldError``, as every field error of the project) naming the value's path
(``run.tokens[3].alternatives[0].prob``) and saying what is allowed.

``Check`` is their common shape; ``optional`` and ``text`` make checks of the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from playground.runs.errors import SchemaError
from playground.runs.ids import RUN_ID_RULE, is_run_id
from playground.runs.text_check import excerpt

MAX_INT = 2**31 - 1  # token ids, positions, counts: what every database column holds

Check = Callable[[Any, str], Any]  # (exported value, its path) → the value, or SchemaError


def kind(value: Any) -> str:
    """A value's JSON type, as a message names it."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def shown(value: Any) -> str:
    """A value a file gave, quoted briefly in a message."""
    if isinstance(value, str):
        return excerpt(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return excerpt(str(value), 24)
    return kind(value)


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def anything(value: Any, path: str) -> Any:
    return value


def an_object(value: Any, path: str, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
    """An object; with ``keys``, it must have exactly those (none missing, none unknown)."""
    if not isinstance(value, dict):
        raise SchemaError(path, f"must be an object, got {kind(value)}")
    if keys is not None:
        unknown = sorted(set(value) - set(keys))
        if unknown:
            raise SchemaError(join(path, unknown[0]), "is not a field of this schema")
        missing = [k for k in keys if k not in value]
        if missing:
            raise SchemaError(join(path, missing[0]), "is required")
    return value


def a_list(value: Any, path: str, low: int = 0, high: int | None = None) -> list[Any]:
    if not isinstance(value, list):
        raise SchemaError(path, f"must be an array, got {kind(value)}")
    if len(value) < low or (high is not None and len(value) > high):
        bound = f"{low} to {high}" if high is not None else f"at least {low}"
        raise SchemaError(path, f"must have {bound} items, got {len(value)}")
    return value


def objects(value: Any, path: str, keys: tuple[str, ...], low: int = 0, high: int | None = None) -> Iterator[tuple[dict, str]]:
    """Each item of an array of ``low`` to ``high`` objects with exactly ``keys``, with its path."""
    for i, item in enumerate(a_list(value, path, low, high)):
        yield an_object(item, f"{path}[{i}]", keys), f"{path}[{i}]"


def an_int(value: Any, path: str, low: int = 0, high: int = MAX_INT) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError(path, f"must be an integer, got {kind(value)}")
    if not low <= value <= high:
        raise SchemaError(path, f"must be an integer from {low} to {high}, got {excerpt(str(value), 24)}")
    return value


def a_number(value: Any, path: str, low: float | None = 0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SchemaError(path, f"must be a finite number, got {kind(value)}")
    if low is not None and value < low:
        raise SchemaError(path, f"must be at least {low}, got {value}")
    return value


def a_prob(value: Any, path: str) -> float:
    a_number(value, path, 0)
    if value > 1:
        raise SchemaError(path, f"must be a probability from 0 to 1, got {value}")
    return value


def a_draw_interval(value: Any, path: str) -> list[float]:
    """[start, end]: two probabilities, start <= end."""
    start, end = a_list(value, path, 2, 2)
    a_prob(start, f"{path}[0]")
    a_prob(end, f"{path}[1]")
    if start > end:
        raise SchemaError(path, f"must start at or before its end, got {start} > {end}")
    return value


def a_str(value: Any, path: str, low: int = 0, high: int | None = None) -> str:
    if not isinstance(value, str):
        raise SchemaError(path, f"must be a string, got {kind(value)}")
    if len(value) < low or (high is not None and len(value) > high):
        most = high if high is not None else "any number of"
        raise SchemaError(path, f"must be {low} to {most} characters, got {len(value)}")
    return value


def a_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(path, f"must be true or false, got {kind(value)}")
    return value


def one_of(value: Any, path: str, allowed: tuple[Any, ...]) -> Any:
    if isinstance(value, bool) or value not in allowed:
        names = ", ".join(repr(a) if a is not None else "null" for a in allowed)
        raise SchemaError(path, f"must be one of {names}, got {shown(value)}")
    return value


def a_run_id(value: Any, path: str) -> str:
    a_str(value, path, 1, 43)
    if not is_run_id(value):
        raise SchemaError(path, f"must be a run id ({RUN_ID_RULE}), got {excerpt(value)}")
    return value


def optional(check: Check) -> Check:
    """``check``, or null."""
    return lambda value, path: None if value is None else check(value, path)


def text(low: int = 0, high: int | None = None) -> Check:
    return lambda value, path: a_str(value, path, low, high)
