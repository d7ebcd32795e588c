"""The constraints the end-to-end grammar tests run, and the check every finished output must pass
(outside the engine: ``json`` + ``jsonschema``, ``re.fullmatch``, membership)."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema

from inference.decoding.generation import GenerationRequest
from inference.decoding.loop_params import LoopParams
from inference.sampling import SamplingParams

CITY_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "population": {"type": "integer", "minimum": 0, "maximum": 99999999},
        "capital": {"type": "boolean"},
    },
    "required": ["name", "population", "capital"],
    "additionalProperties": False,
}
PATTERN = "[A-Z][a-z]{2,12}, [0-9]{4}"
OPTIONS = ["red", "green", "blue"]

GRAMMARS: dict[str, tuple[str, dict[str, Any]]] = {
    "json_schema": (
        "Describe the city of Paris as a JSON object with its name, population and whether it is a capital.",
        {"type": "json_schema", "schema": CITY_SCHEMA},
    ),
    "regex": ("Name a city and the year it was founded, like 'Rome, 0753'.", {"type": "regex", "pattern": PATTERN}),
    "choice": ("What colour is the sky on a clear day? Answer red, green or blue.", {"type": "choice", "options": OPTIONS}),
}


def validates(grammar: dict[str, Any], text: str) -> bool:
    """Whether ``text`` satisfies ``grammar``, checked independently of llguidance."""
    if grammar["type"] == "json_schema":
        try:
            jsonschema.validate(json.loads(text), grammar["schema"])
        except (ValueError, jsonschema.ValidationError):
            return False
        return True
    if grammar["type"] == "regex":
        return re.fullmatch(grammar["pattern"], text) is not None
    return text in grammar["options"]


def grammar_request(
    kind: str, *, temperature: float, seed: int, max_tokens: int = 60, mode: str = "chat", **loop
) -> GenerationRequest:
    prompt, grammar = GRAMMARS[kind]
    return GenerationRequest(
        prompt,
        mode=mode,  # type: ignore[arg-type]
        sampling=SamplingParams(grammar=grammar, temperature=temperature, seed=seed),
        loop=LoopParams(max_tokens=max_tokens, **loop),
    )
