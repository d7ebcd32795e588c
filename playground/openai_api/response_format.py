"""The body's output constraint: OpenAI's ``response_format`` or our ``grammar`` extension, as the
one ``grammar`` sampling parameter (``inference.sampling.stages.grammar``; docs/openai-api.md).

- ``{"type": "text"}`` (or no ``response_format``): no constraint.
- ``{"type": "json_object"}``: any JSON object: the JSON Schema ``{"type": "object"}``, through the
  same grammar stage as every other constraint.
- ``{"type": "json_schema", "json_schema": {"name", "description"?, "schema"?, "strict"?}}``: that
  schema (none given: any JSON value). ``strict`` true or false, the schema is enforced the same way,
  token by token: our decoding cannot treat a schema as a mere hint, and the stricter promise is the
  honest one (``STRICT_MEANING``).
- ``grammar`` (our extension, the websocket's ``params.grammar``): passed on as it is; the frame
  parser checks it and names ``grammar.pattern``, ``grammar.schema``, ... itself.

Both at once is refused. A schema the grammar library cannot use is refused here by the body's own
name for it (``response_format.json_schema.schema``), with the library's reason.
"""

from __future__ import annotations

import re
from typing import Any

from inference.errors import ParamError
from inference.sampling.stages.grammar import GRAMMAR
from playground.edge import frames
from playground.openai_api.errors import ApiError

FIELD = "response_format"
TYPES = ("text", "json_object", "json_schema")
JSON_SCHEMA_KEYS = frozenset({"name", "description", "schema", "strict"})
NAME_RULE = re.compile(r"[A-Za-z0-9_-]{1,64}")  # OpenAI's rule for json_schema.name
ANY_OBJECT = {"type": "object"}  # json_object's schema
ANY_VALUE: dict[str, Any] = {}  # json_schema without a schema: any JSON value
INVALID = "invalid_value"
STRICT_MEANING = "enforced token by token whether strict is true or false"


def constraint(body: dict[str, Any]) -> dict[str, Any] | None:
    """The grammar the body asks for (our ``params.grammar`` shape), or None; ``ApiError`` naming
    the field at fault."""
    response_format = body.get(FIELD)
    grammar = _from_response_format(response_format) if response_format is not None else None
    if "grammar" in body and body["grammar"] is not None and grammar is not None:
        raise ApiError(
            400, f"give response_format or grammar, not both (response_format is {response_format['type']!r})", FIELD, INVALID
        )
    if grammar is None:
        return body.get("grammar")
    _check(grammar, f"{FIELD}.json_schema" if response_format["type"] == "json_schema" else FIELD)
    return grammar


def _from_response_format(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict) or value.get("type") not in TYPES:
        raise ApiError(400, f"{FIELD} must be an object whose type is one of {list(TYPES)}", _type_param(value), INVALID)
    kind = value["type"]
    allowed = {"type", "json_schema"} if kind == "json_schema" else {"type"}
    extra = sorted(set(value) - allowed)
    if extra:
        raise ApiError(
            400, f"{FIELD} of type {kind!r} takes no {frames.excerpt(extra[0])}", f"{FIELD}.{extra[0]}", "unknown_parameter"
        )
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_schema", "schema": ANY_OBJECT}
    return {"type": "json_schema", "schema": _json_schema(value.get("json_schema"))}


def _type_param(value: Any) -> str:
    return f"{FIELD}.type" if isinstance(value, dict) else FIELD


def _json_schema(value: Any) -> Any:
    """The schema of ``response_format.json_schema``, its other fields checked."""
    where = f"{FIELD}.json_schema"
    if value is None:
        raise ApiError(400, f"{where} is required with type 'json_schema'", where, "missing_field")
    if not isinstance(value, dict):
        raise ApiError(400, f"{where} must be an object with name and schema", where, INVALID)
    extra = sorted(set(value) - JSON_SCHEMA_KEYS)
    if extra:
        raise ApiError(400, f"{where} takes no {frames.excerpt(extra[0])}", f"{where}.{extra[0]}", "unknown_parameter")
    name = value.get("name")
    if name is None:
        raise ApiError(400, f"{where}.name is required", f"{where}.name", "missing_field")
    if not isinstance(name, str) or not NAME_RULE.fullmatch(name):
        raise ApiError(400, f"{where}.name must be 1 to 64 letters, digits, underscores or dashes", f"{where}.name", INVALID)
    if value.get("description") is not None and not isinstance(value["description"], str):
        raise ApiError(400, f"{where}.description must be a string", f"{where}.description", INVALID)
    if value.get("strict") is not None and not isinstance(value["strict"], bool):
        raise ApiError(400, f"{where}.strict must be true, false or null", f"{where}.strict", INVALID)
    schema = value.get("schema", ANY_VALUE)
    if not isinstance(schema, dict):
        raise ApiError(400, f"{where}.schema must be a JSON Schema object", f"{where}.schema", INVALID)
    return schema


def _check(grammar: dict[str, Any], prefix: str) -> None:
    """Compiles the grammar as the run will; its error named by the body's field (``grammar.schema``
    → ``<prefix>.schema``)."""
    try:
        GRAMMAR.check(grammar)
    except ParamError as error:
        param = prefix + (error.param or "grammar").removeprefix("grammar")
        message = error.message.replace("grammar.", f"{prefix}.") if error.param else error.message
        raise ApiError(400, message, param, error.code) from None
