"""Token events for the page's Node tests, checked against the event's own JSON Schema
(``static/shared/token-event.schema.json``, generated from ``playground.wire.token_event.TokenEvent``):
a fixture that the server could not send fails here, not in the page."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from playground.wire.token_event import SCHEMA_FILE, TokenEvent

VALIDATOR = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def checked(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` itself, once the schema accepts it."""
    VALIDATOR.validate(event)
    return event


def token_event(**fields: Any) -> dict[str, Any]:
    """A whole ``token`` event: a sampled token's defaults with ``fields`` over them, checked (a
    field the event gained after these defaults were written reads as ``TokenEvent.filled`` says)."""
    event = {
        "type": "token",
        "request_id": "r-1",
        "sample": 0,
        "index": 0,
        "id": 1,
        "token": " a",
        "text": " a",
        "raw_prob": 0.5,
        "prob": 0.5,
        "removed_by": None,
        "forced": False,
        "origin": "sampled",
        "draw": 0.25,
        "draw_interval": [0.0, 0.5],
        "alternatives": [],
        "stages": [],
        "entropy": {"before": 1.0, "after": 1.0},
        "watched": [],
        "elapsed_ms": 10.0,
    }
    return checked(TokenEvent.filled(event | fields))
