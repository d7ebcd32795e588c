"""The saved-run errors share one shape and one argument order with ``inference.errors.ParamError``:
``(param, message, code)``, the same attributes, and the websocket API's ``error`` object."""

from __future__ import annotations

import inspect

import pytest

from inference.errors import ParamError
from playground.runs.errors import BadRequest, NotFound, RunsError, SchemaError, UnencodableText

ERRORS = [NotFound, BadRequest, SchemaError, UnencodableText]


def _leading_parameters(cls: type, count: int) -> list[str]:
    return list(inspect.signature(cls.__init__).parameters)[1 : 1 + count]


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_same_argument_order_and_attributes_as_param_error(cls):
    assert _leading_parameters(cls, 3) == _leading_parameters(ParamError, 3) == ["param", "message", "code"]
    error = cls("run.tokens[3].prob", "must be a probability from 0 to 1, got 1.5", "some_code")
    reference = ParamError("run.tokens[3].prob", "must be a probability from 0 to 1, got 1.5", "some_code")
    for name in ("param", "message", "code"):
        assert getattr(error, name) == getattr(reference, name)
    assert str(error) == str(reference)
    assert error.to_dict() == {"code": "some_code", "message": reference.message, "param": "run.tokens[3].prob"}


def test_each_has_its_default_code_and_status():
    assert (NotFound("id", "m").code, NotFound("id", "m").status) == ("not_found", 404)
    assert (SchemaError("run", "m").code, SchemaError("run", "m").status) == ("invalid_export", 400)
    assert UnencodableText("prompt", "m").code == "unencodable_text"
    too_large = BadRequest(None, "the body is larger than 4096 bytes", "too_large", 413)
    assert (too_large.code, too_large.status, too_large.param) == ("too_large", 413, None)
    assert all(issubclass(cls, RunsError) for cls in ERRORS)
    assert issubclass(SchemaError, ValueError) and issubclass(UnencodableText, ValueError)


def test_every_field_error_of_the_project_has_one_base_and_one_shape():
    from inference.errors import FieldError
    from playground.edge.frames import ProtocolError

    for cls in [ParamError, ProtocolError, *ERRORS]:
        assert issubclass(cls, FieldError), cls
        assert _leading_parameters(cls, 3) == ["param", "message", "code"], cls
    error = ProtocolError("request_id", "request_id is required", "missing_field", request_id=None)
    assert error.to_dict() == {"code": "missing_field", "message": "request_id is required", "param": "request_id"}
    assert ProtocolError(None, "m").code == "invalid_value"  # the shared default code
