"""Errors that carry the name of the field that caused them, so callers can report it as is."""

from __future__ import annotations

from typing import Any


class FieldError(ValueError):
    """The one shape of every error that names what a caller sent wrong: ``(param, message, code)``.

    ``param`` is the field's name (a dotted path when nested, e.g. ``logit_bias.42``), or None when
    no single field is at fault; ``message`` says what is wrong and what is allowed; ``code`` is a
    stable machine-readable word (``default_code`` when not given). ``to_dict()`` is the ``error``
    object the websocket API and the JSON endpoints answer with.
    """

    default_code = "invalid_value"

    def __init__(self, param: str | None, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.param = param
        self.message = message
        self.code = code or self.default_code

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "param": self.param}


class ParamError(FieldError):
    """A parameter is missing, unknown, of the wrong type or out of its range.

    ``code`` is one of ``missing_field``, ``invalid_value``, ``unknown_param``.
    The message always says what was allowed.
    """

    def prefixed(self, prefix: str) -> ParamError:
        """The same error with its field named under ``prefix`` (``params.`` for the websocket)."""
        return ParamError(f"{prefix}{self.param}", f"{prefix}{self.message}", self.code)


class Cancelled(Exception):
    """The caller no longer wants the answer: raised by work that checks a cancel flag before it
    has produced anything (a prefill between chunks, an inspection between tokens)."""


EXCERPT_CHARACTERS = 40  # an error quotes at most this much of a bad value


def excerpt(value: Any) -> str:
    """A bad value as an error quotes it: its ``repr``, cut to a few dozen characters."""
    text = repr(value)
    if len(text) <= EXCERPT_CHARACTERS:
        return text
    return f"{text[:EXCERPT_CHARACTERS]}… ({len(text)} characters)"
