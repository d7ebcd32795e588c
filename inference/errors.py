"""Errors that carry the name of the field that caused them, so callers can report it as is."""

from __future__ import annotations


class ParamError(ValueError):
    """A parameter is missing, unknown, of the wrong type or out of its range.

    ``param`` is the field's name (a dotted path when nested, e.g. ``logit_bias.42``);
    ``code`` is one of ``missing_field``, ``invalid_value``, ``unknown_param``.
    The message always says what was allowed.
    """

    def __init__(self, param: str, message: str, code: str = "invalid_value") -> None:
        super().__init__(message)
        self.param = param
        self.message = message
        self.code = code

    def prefixed(self, prefix: str) -> ParamError:
        """The same error with its field named under ``prefix`` (``params.`` for the websocket)."""
        return ParamError(f"{prefix}{self.param}", f"{prefix}{self.message}", self.code)


class Cancelled(Exception):
    """The caller no longer wants the answer: raised by work that checks a cancel flag before it
    has produced anything (a prefill between chunks, an inspection between tokens)."""
