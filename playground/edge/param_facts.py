"""Every parameter fact the pages and API clients need, as one JSON Schema built from ``inference/``.

The schema (JSON Schema draft 2020-12) describes the flat ``params`` object of a ``generate``
request: every field of ``SamplingParams`` then of ``LoopParams``, in that order, with its type,
range and ``default`` read from their ``field_facts()``. Where JSON Schema has no keyword, the
schema carries our own, prefixed ``x-``:

- per property: ``x-kind`` (the field's kind in ``field_facts``), ``x-part`` (``"sampling"``: the
  sampler chain's, which ``inspect`` accepts too; ``"loop"``: the generation loop's) and ``x-off``
  (what leaves it doing nothing, in words);
- ``x-stage-order``: the sampler stages in their default order;
- ``x-stages``: when each stage is on, as clauses that must all hold (``{"param", "op", "value"}``
  with op ``==``, ``!=``, ``>``, ``<``, or ``nonempty``; ``{"stage", "on"}`` for another stage);
- ``x-greedy``: when the chain ends early (``when``, a clause) and after which stage (``last_stage``).

``x-stages`` and ``x-greedy`` are the data form of ``SamplingParams.stage_enabled`` and
``enabled_stages``; tests evaluate them (in JavaScript, as the page does) against those methods.
Served at ``/api/params.schema.json`` and rendered into the pages that need it.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from typing import Any

from inference.decoding.loop_params import LoopParams
from inference.sampling.params import DEFAULT_ORDER, SamplingParams
from inference.sampling.stages import STAGES

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

Clause = dict[str, Any]

# Stage name -> the clauses that must all hold for it to be in the chain: each stage's declared
# on-rule (``SamplingParams.stage_enabled``), in the default order.
STAGE_SWITCHES: dict[str, tuple[Clause, ...]] = {stage.name: tuple(c.to_json() for c in stage.on) for stage in STAGES}


def _greedy() -> dict[str, Any]:
    """When the chain ends early, and after which stage: the one stage that declares an end."""
    (stage,) = (stage for stage in STAGES if stage.ends_chain is not None)
    return {"when": stage.ends_chain.to_json(), "last_stage": stage.name}


# T = 0: the distribution is one-hot after the temperature stage; no later stage runs.
GREEDY = _greedy()


def _property(name: str, fact: dict[str, Any], part: str) -> dict[str, Any]:
    kind = fact["kind"]
    prop: dict[str, Any] = {}
    if kind in ("number", "integer"):
        prop["type"] = [kind, "null"] if fact["nullable"] else kind
        prop["exclusiveMinimum" if fact["low_open"] else "minimum"] = fact["low"]
        if fact["high"] is not None:
            prop["exclusiveMaximum" if fact["high_open"] else "maximum"] = fact["high"]
    elif kind == "choice":
        prop.update(type="integer", enum=list(fact["choices"]))
    elif kind == "boolean":
        prop["type"] = "boolean"
    elif kind == "strings":
        low, high = fact["item_length"]
        item = {"type": "string", "minLength": low, "maxLength": high}
        lines = {"type": "array", "items": item, "maxItems": fact["max_items"]}
        prop.update({"anyOf": [item, lines]} if name == "stop" else lines)  # stop: one string is one stop
    elif kind == "token_bias":
        bias = {"type": "number", "minimum": fact["low"], "maximum": fact["high"]}
        prop.update(type="object", propertyNames={"pattern": "^[0-9]+$"}, additionalProperties=bias)
    elif kind == "grammar":
        sources = {
            "schema": {"type": ["object", "boolean"]},
            "pattern": {"type": "string", "minLength": 1},
            "options": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": fact["max_options"],
            },
        }
        shapes = [
            {
                "type": "object",
                "properties": {"type": {"const": kind_}, key: sources[key]},
                "required": ["type", key],
                "additionalProperties": False,
            }
            for kind_, key in fact["types"].items()
        ]
        prop["oneOf"] = [{"type": "null"}, *shapes]
    elif kind == "stage_order":
        prop.update(type="array", items={"enum": list(fact["choices"])}, uniqueItems=True)
    else:
        raise ValueError(f"{name}: no schema for the kind {kind!r}")
    prop["default"] = fact["default"]
    prop.update({"x-kind": kind, "x-part": part, "x-off": fact["off"]})
    return prop


@functools.cache
def params_schema() -> dict[str, Any]:
    """The JSON Schema of ``params`` (see the module docstring). Built once; do not modify it."""
    properties: dict[str, Any] = {}
    for part, facts in (("sampling", SamplingParams.field_facts()), ("loop", LoopParams.field_facts())):
        for name, fact in facts.items():
            properties[name] = _property(name, fact, part)
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "Generation parameters",
        "description": (
            "The params object of a generate request (inspect takes the x-part 'sampling' ones). "
            "Every key is optional; a missing key takes its default. Rules between fields: min_tokens "
            "at most max_tokens; max_tokens fits the context window after the prompt; n above 1 needs "
            "num_beams 1; sampler_order names every stage the settings switch on; xtc_probability "
            "above 0 needs a seed; logit_bias ids are below the vocabulary size."
        ),
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "x-stage-order": list(DEFAULT_ORDER),
        "x-stages": {name: list(STAGE_SWITCHES[name]) for name in DEFAULT_ORDER},
        "x-greedy": GREEDY,
    }


@functools.cache
def params_schema_json() -> tuple[str, str]:
    """The schema as compact JSON text, and its ETag (a hash of that text)."""
    text = json.dumps(params_schema(), separators=(",", ":"), ensure_ascii=False)
    return text, '"' + hashlib.sha256(text.encode()).hexdigest()[:32] + '"'


def default_params() -> dict[str, Any]:
    """Every parameter's default: the normalized params of a request that sets nothing."""
    return {name: copy.deepcopy(prop["default"]) for name, prop in params_schema()["properties"].items()}


# The live comparison's own fields (/compare/live): shared by every column, or one per column; any
# other parameter goes in a column's JSON box (docs/runs.md, "Live comparison").
LIVE_SHARED: tuple[str, ...] = ("seed", "max_tokens")
LIVE_COLUMN: tuple[str, ...] = ("temperature", "top_p", "top_k", "min_p")


def live_fields() -> dict[str, Any]:
    """The live comparison's fields as the page reads them: ``shared`` and ``column`` keys, each
    column field with the ``inputmode`` its kind wants."""
    properties = params_schema()["properties"]
    for key in (*LIVE_SHARED, *LIVE_COLUMN):
        if key not in properties:
            raise KeyError(f"the live comparison names {key!r}, which is not a parameter")
    return {
        "shared": list(LIVE_SHARED),
        "column": [
            {"key": key, "inputmode": "numeric" if properties[key]["x-kind"] == "integer" else "decimal"} for key in LIVE_COLUMN
        ],
    }
