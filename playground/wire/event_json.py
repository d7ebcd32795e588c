"""A ``token`` event's JSON and its typed classes (``playground.wire.token_event``), both ways, by
their type hints: ``read`` checks each field's value against its type and ``Range`` (``EventError``
naming the first one at fault by its path, ``alternatives[3].prob``); ``write`` and ``writers`` give
the JSON data of a value. The hint helpers are shared with the event's JSON Schema.

A reader and a writer are made once a hint: a token holds ~150 values, each one call of its own
function (a stored token row loads in ~80 us and exports in ~23; interpreting the hints at every
value took 134 and 51); an error's path is spelled out only on its way up.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, is_dataclass
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from inference.decoding.origin import TOKEN_ORIGINS, Origin
from inference.sampling.trace import Range


class EventError(ValueError):
    """A ``token`` event that does not have the event's shape; ``path`` names the bad field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


@cache
def field_names(cls: type) -> tuple[str, ...]:
    """A class's JSON keys in order: its ``KEYS`` where it says them, else its fields'."""
    keys = getattr(cls, "KEYS", None)
    return tuple(keys) if keys is not None else tuple(f.name for f in fields(cls))


@cache
def class_hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls, include_extras=True)


def kind_name(value: Any) -> str:
    """A value's JSON type, as a message names it."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return "an object" if isinstance(value, Mapping) else names.get(type(value), "a number")


def range_of(hint: Any) -> tuple[Any, Range | None]:
    """(the type, its ``Range`` or None) of a hint that may be ``Annotated``."""
    if get_origin(hint) is Annotated:
        base, *extras = get_args(hint)
        return base, next((e for e in extras if isinstance(e, Range)), None)
    return hint, None


def nullable_of(hint: Any) -> tuple[bool, Any]:
    """(nullable, the hint without None)."""
    if get_origin(hint) is Union or type(hint).__name__ == "UnionType":
        args = [a for a in get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(get_args(hint)) == 2:
            return True, args[0]
    return False, hint


def read(cls: type, data: Any) -> Any:
    """``data`` read as a ``cls`` (``EventError`` naming the first bad field, ``(event)`` for the whole)."""
    try:
        return _class_reader(cls)(data)
    except EventError as error:
        raise EventError(error.path or "(event)", error.message) from None


# A field's reader: its JSON value → its value, or ``EventError`` with a path relative to the value
# ("" for the value itself). Made once a hint (``_reader``): reading a token walks ~150 values, and
# each is one call of its own reader; a path is spelled out only for an error, on its way up.
Reader = Callable[[Any], Any]


@cache
def _class_reader(cls: type) -> Reader:
    hints = class_hints(cls)
    optional = getattr(cls, "OPTIONAL", frozenset())
    plan = tuple((name, _reader(hints[name]), name in optional) for name in field_names(cls))

    def read_object(data: Any) -> Any:
        if type(data) is not dict and not isinstance(data, Mapping):
            raise EventError("", f"must be an object, got {kind_name(data)}")
        values = {}
        for name, reader, may_lack in plan:
            if name not in data:
                if may_lack:
                    continue
                raise EventError(name, "is required")
            try:
                values[name] = reader(data[name])
            except EventError as error:
                raise _within(error, name) from None
        return cls(**values)

    return read_object


@cache
def _reader(hint: Any) -> Reader:
    nullable, hint = nullable_of(hint)
    hint, bounds = range_of(hint)
    read = _kind_reader(hint, bounds)
    if nullable:
        return lambda value: None if value is None else read(value)
    return read


def _kind_reader(hint: Any, bounds: Range | None) -> Reader:  # noqa: C901 — one branch a kind of value
    if isinstance(hint, type) and is_dataclass(hint):
        return _class_reader(hint)
    if get_origin(hint) is tuple:
        return _tuple_reader(get_args(hint))
    if hint is Origin:
        names = ", ".join(repr(o.value) for o in TOKEN_ORIGINS)

        def read_origin(value: Any) -> Origin:
            if value not in TOKEN_ORIGINS:
                got = str(value)[:24] if isinstance(value, str) else kind_name(value)
                raise _wrong(value, f"must be one of {names}, got {got}")
            return Origin(value)

        return read_origin
    if hint is bool:

        def read_bool(value: Any) -> bool:
            if value is not True and value is not False:
                raise _wrong(value, f"must be true or false, got {kind_name(value)}")
            return value  # type: ignore[no-any-return]

        return read_bool
    if hint is str:

        def read_str(value: Any) -> str:
            if type(value) is not str and not isinstance(value, str):
                raise _wrong(value, f"must be a string, got {kind_name(value)}")
            return value  # type: ignore[no-any-return]

        return read_str
    if hint is int or hint is float:
        return _number_reader(hint, bounds)
    raise TypeError(f"no reader for {hint!r}")


def _number_reader(hint: type, bounds: Range | None) -> Reader:
    accepted = int if hint is int else (int, float)
    wrong_kind = "an integer" if hint is int else "a finite number"
    low = -math.inf if bounds is None else bounds.low
    high = math.inf if bounds is None or bounds.high is None else bounds.high
    allowed = f"from {low:g} to {high:g}" if high != math.inf else f"at least {low:g}"
    what = "an integer" if hint is int else "a number"

    def read_number(value: Any) -> Any:
        if type(value) is not hint and (isinstance(value, bool) or not isinstance(value, accepted)):
            raise _wrong(value, f"must be {wrong_kind}, got {kind_name(value)}")
        if hint is float and not math.isfinite(value):
            raise EventError("", f"must be a finite number, got {kind_name(value)}")
        if not low <= value <= high:
            raise EventError("", f"must be {what} {allowed}, got {str(value)[:24]}")
        return value

    return read_number


def _tuple_reader(args: tuple[Any, ...]) -> Reader:
    """An array: of any length when ``args`` is ``(item, ...)``, else of one item each."""
    if len(args) == 2 and args[1] is Ellipsis:
        item = _reader(args[0])

        def read_items(value: Any) -> tuple[Any, ...]:
            _array(value)
            try:
                return tuple([item(v) for v in value])
            except EventError:
                for index, v in enumerate(value):  # (again, to name the item at fault)
                    try:
                        item(v)
                    except EventError as error:
                        raise _within(error, f"[{index}]") from None
                raise

        return read_items
    readers = tuple(_reader(a) for a in args)

    def read_fixed(value: Any) -> tuple[Any, ...]:
        _array(value)
        if len(value) != len(readers):
            raise EventError("", f"must have {len(readers)} to {len(readers)} items, got {len(value)}")
        out = []
        for index, (reader, v) in enumerate(zip(readers, value)):
            try:
                out.append(reader(v))
            except EventError as error:
                raise _within(error, f"[{index}]") from None
        return tuple(out)

    return read_fixed


def _array(value: Any) -> None:
    kind = type(value)
    if kind is not list and kind is not tuple and (not isinstance(value, Sequence) or isinstance(value, str)):
        raise _wrong(value, f"must be an array, got {kind_name(value)}")


def _wrong(value: Any, message: str) -> EventError:
    """The error of a value of the wrong kind (a null named as such)."""
    return EventError("", "must not be null" if value is None else message)


def _within(error: EventError, step: str) -> EventError:
    """``error`` one level up: its path under ``step`` (a field name or ``[index]``)."""
    if not error.path:
        return EventError(step, error.message)
    return EventError(f"{step}{'' if error.path.startswith('[') else '.'}{error.path}", error.message)


def write(value: Any) -> Any:
    """A typed value (a ``token`` event's class) as JSON data."""
    return _writer(type(value))(value)


@cache
def writers(cls: type) -> dict[str, Writer]:
    """Each JSON key of ``cls``, in order, with the function that writes its value as JSON data."""
    hints = class_hints(cls)
    return {name: _writer(hints[name]) for name in field_names(cls)}


# A field's writer: its value → JSON data. Made once a hint, as the readers are.
Writer = Callable[[Any], Any]


@cache
def _writer(hint: Any) -> Writer:
    nullable, hint = nullable_of(hint)
    hint, _ = range_of(hint)
    write_value = _kind_writer(hint)
    if write_value is _as_is or not nullable:
        return write_value

    def write_or_null(value: Any) -> Any:
        return None if value is None else write_value(value)

    return write_or_null


def _kind_writer(hint: Any) -> Writer:
    if isinstance(hint, type) and is_dataclass(hint):
        fields_of = writers(hint)

        def write_object(value: Any) -> dict[str, Any]:
            return {name: write_field(getattr(value, name)) for name, write_field in fields_of.items()}

        return write_object
    if get_origin(hint) is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            item = _writer(args[0])
            if item is _as_is:
                return list

            def write_items(value: Any) -> list[Any]:
                return [item(v) for v in value]

            return write_items
        items = tuple(_writer(a) for a in args)
        if all(item is _as_is for item in items):
            return list

        def write_fixed(value: Any) -> list[Any]:
            return [item(v) for item, v in zip(items, value)]

        return write_fixed
    if hint is Origin:
        return lambda value: value.value
    return _as_is  # a string, number or boolean (or null) is its own JSON


def _as_is(value: Any) -> Any:
    return value
