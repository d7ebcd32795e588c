"""The errors of the saved-run pages and endpoints, all of one shape.

Each names the bad part of the request (``param``: a field's path such as
``run.tokens[3].alternatives[0].prob`` or ``ids[1]``, or null), says what is wrong and what is
allowed (``message``), and has a stable ``code``; the arguments come in the order of
``inference.errors.ParamError``: ``(param, message, code)``. ``to_dict()`` is the ``error`` object
every JSON answer carries, the websocket API's shape: ``{"code", "message", "param"}``.
"""

from __future__ import annotations

from inference.errors import FieldError


class RunsError(FieldError):
    """Base of the errors below; ``status`` is the HTTP status it is answered with."""

    status = 400


class NotFound(RunsError):
    """No saved run answers to an id, or the id cannot be one (code ``invalid_id``)."""

    status = 404
    default_code = "not_found"


class BadRequest(RunsError):
    """A request the endpoint cannot read: wrong method, content type, size, JSON or field."""

    def __init__(self, param: str | None, message: str, code: str | None = None, status: int = 400) -> None:
        super().__init__(param, message, code)
        self.status = status


class SchemaError(RunsError):
    """An import file that does not follow the export schema; ``param`` is the path of the first
    bad field."""

    default_code = "invalid_export"


class UnencodableText(RunsError):
    """Text no database and no page can hold: a lone surrogate (half of a UTF-16 pair, e.g. the
    JSON escape ``\\ud800`` on its own) or U+0000. Raised before anything is saved."""

    default_code = "unencodable_text"
