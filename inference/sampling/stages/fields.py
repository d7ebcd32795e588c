"""The ``SamplingParams`` fields as the stages declare them: name, default, range and what "off" is,
with the one ``check`` that ``SamplingParams`` and the stage classes both use (so no range is
written twice). Kinds: ``Number``, ``Integer``, ``Choice``, ``TokenBias``, ``Strings``.

How a kind travels as JSON: a ``plain`` kind's stored value is its own JSON (``carried``: the JSON
types ``SamplingParams.to_dict`` writes it as, all ``from_json`` accepts back); any other kind
writes its value with ``dump`` and reads it back with ``load``, which checks the shape but not the
range (the value was checked where the request was made).
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from inference.errors import ParamError

MAX_FLOAT_INT = 2**1023  # integers beyond this overflow a float


def require(ok: bool, param: str, message: str) -> None:
    """A check a stage makes beyond its fields' ranges (e.g. top_k's 0, which means "no stage")."""
    if not ok:
        raise ParamError(param, message)


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    """A finite int or float (not a bool)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    if isinstance(v, int):
        return abs(v) <= MAX_FLOAT_INT  # a larger integer has no float: math.isfinite would raise
    return math.isfinite(v)


@dataclass(frozen=True)
class Field:
    """One ``SamplingParams`` field: its name, default and what leaves it doing nothing (``off``).
    ``nullable``: null is accepted and read as the default. ``label`` and ``about``: what the pages
    call it and say of it in one line (written for them by ``stage_words``). ``definition``: what it
    does, exactly, in Markdown (the last column of docs/sampling.md's parameter table, written by
    ``param_table``). Subclasses add the range."""

    name: str
    default: Any
    off: str
    nullable: bool = False
    label: str = ""
    about: str = ""
    definition: str = ""

    plain: ClassVar[bool] = True  # the stored value is its own JSON (else: ``dump`` and ``load``)
    carried: ClassVar[tuple[type, ...]] = ()  # a plain kind's JSON types, exactly (a bool is no int here)

    def check(self, value: Any) -> Any:
        """The value as ``SamplingParams`` stores it; ``ParamError`` naming the field and its range."""
        if value is None and self.nullable:
            return self.default
        return self._check(value)

    def _check(self, value: Any) -> Any:
        raise NotImplementedError

    def facts(self) -> dict[str, Any]:
        """The field's range as plain data (``SamplingParams.field_facts`` adds the default)."""
        raise NotImplementedError

    def range_words(self) -> str:
        """The field's range as docs/sampling.md's parameter table writes it: "[0, 2]", "integer >= 1"."""
        raise NotImplementedError

    def dump(self, value: Any) -> Any:
        """The stored value as JSON, for a kind that is not ``plain``."""
        raise NotImplementedError

    def load(self, value: Any) -> Any:
        """What ``dump`` wrote, back as the stored value: its shape checked (``ParamError`` naming the
        field), not its range."""
        raise NotImplementedError


@dataclass(frozen=True)
class Number(Field):
    """A finite number in [low, high] (either end open; ``high`` None: unbounded), stored as float."""

    low: float = 0.0
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    carried: ClassVar[tuple[type, ...]] = (float,)  # ``check`` stores a float

    def _check(self, v: Any) -> float:
        ok = is_number(v) and (v > self.low if self.low_open else v >= self.low)
        if ok and self.high is not None:
            ok = v < self.high if self.high_open else v <= self.high
        if not ok:
            raise ParamError(self.name, f"{self.name} must be a number {self.range} ({self.off}); got {v!r}")
        return float(v)

    @property
    def range(self) -> str:
        if self.high is None:
            return f"> {self.low:g}" if self.low_open else f">= {self.low:g}"
        return f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"

    def range_words(self) -> str:
        return self.range.removeprefix("in ")

    def facts(self) -> dict[str, Any]:
        high_open = self.high_open or self.high is None  # an unbounded range never reaches its end
        return {"kind": "number", "low": self.low, "low_open": self.low_open, "high": self.high, "high_open": high_open}


@dataclass(frozen=True)
class Integer(Field):
    """An integer (not a bool) in [low, high] (``high`` None: unbounded). ``words``: the range as the
    error says it, when not the plain interval."""

    low: int = 0
    high: int | None = None
    words: str | None = None

    carried: ClassVar[tuple[type, ...]] = (int,)

    def _check(self, v: Any) -> int:
        if not is_int(v) or v < self.low or (self.high is not None and v > self.high):
            said = self.words or f"{self.range} ({self.off})"
            raise ParamError(self.name, f"{self.name} must be an integer {said}; got {v!r}")
        return v

    @property
    def range(self) -> str:
        return f">= {self.low}" if self.high is None else f"in [{self.low}, {self.high}]"

    def range_words(self) -> str:
        return f"integer {self.words or self.range}"

    def facts(self) -> dict[str, Any]:
        return {"kind": "integer", "low": self.low, "low_open": False, "high": self.high, "high_open": False}


@dataclass(frozen=True)
class Choice(Field):
    """One of a few integers; ``words`` names them for the error."""

    choices: tuple[int, ...] = ()
    words: str = ""

    carried: ClassVar[tuple[type, ...]] = (int,)

    def _check(self, v: Any) -> int:
        if not is_int(v) or v not in self.choices:
            raise ParamError(self.name, f"{self.name} must be {self.words}; got {v!r}")
        return v

    def facts(self) -> dict[str, Any]:
        return {"kind": "choice", "choices": self.choices}

    def range_words(self) -> str:
        return " or ".join(str(c) for c in self.choices)


@dataclass(frozen=True)
class TokenBias(Field):
    """``{token id: bias}``: ids integers >= 0 (or their decimal strings), biases in [low, high];
    stored read-only, sorted by id."""

    low: float = 0.0
    high: float = 0.0

    plain: ClassVar[bool] = False  # JSON keys are strings

    def _check(self, value: Any) -> Mapping[int, float]:
        name = self.name
        if not isinstance(value, Mapping):
            raise ParamError(name, f"{name} must be an object {{token id: bias}}")
        out: dict[int, float] = {}
        for key, bias in value.items():
            token = int(key) if isinstance(key, str) and key.isascii() and key.isdigit() else key
            if not is_int(token) or token < 0:
                raise ParamError(f"{name}.{key}", f"{name} keys must be token ids (integers >= 0); got {key!r}")
            if not is_number(bias) or not self.low <= bias <= self.high:
                raise ParamError(
                    f"{name}.{token}", f"{name} values must be numbers in [{self.low:g}, {self.high:g}]; got {bias!r}"
                )
            out[token] = float(bias)
        return types.MappingProxyType(dict(sorted(out.items())))

    def dump(self, value: Mapping[int, float]) -> dict[str, float]:
        return {str(token): bias for token, bias in value.items()}

    def load(self, value: Any) -> Mapping[int, float]:
        if not isinstance(value, dict):
            raise ParamError(self.name, f"a carried {self.name} must be an object {{token id: bias}}")
        out: dict[int, float] = {}
        for key, bias in value.items():
            if not (isinstance(key, str) and key.isascii() and key.isdigit()) or type(bias) is not float:
                raise ParamError(f"{self.name}.{key}", f"a carried {self.name} maps token ids to floats; got {key!r}: {bias!r}")
            out[int(key)] = bias
        return types.MappingProxyType(dict(sorted(out.items())))

    def range_words(self) -> str:
        return f"`{{token id: bias}}`, id >= 0, bias in [{self.low:g}, {self.high:g}]"

    def facts(self) -> dict[str, Any]:
        return {"kind": "token_bias", "low": self.low, "low_open": False, "high": self.high, "high_open": False}


@dataclass(frozen=True)
class Strings(Field):
    """A list of at most ``max_items`` strings, each ``item_length`` (low, high) characters long."""

    max_items: int = 0
    item_length: tuple[int, int] = (1, 1)

    plain: ClassVar[bool] = False  # stored as a tuple, written as a list

    def _check(self, value: Any) -> tuple[str, ...]:
        name = self.name
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ParamError(name, f"{name} must be a list of strings")
        low, high = self.item_length
        if len(value) > self.max_items or not all(isinstance(s, str) and low <= len(s) <= high for s in value):
            raise ParamError(name, f"{name} must be at most {self.max_items} strings of {low}-{high} characters")
        return tuple(value)

    def dump(self, value: tuple[str, ...]) -> list[str]:
        return list(value)

    def load(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, (list, tuple)) or not all(isinstance(s, str) for s in value):
            raise ParamError(self.name, f"a carried {self.name} must be a list of strings")
        return tuple(value)

    def range_words(self) -> str:
        low, high = self.item_length
        return f"up to {self.max_items} strings of {low}–{high} chars"

    def facts(self) -> dict[str, Any]:
        return {"kind": "strings", "max_items": self.max_items, "item_length": self.item_length}
