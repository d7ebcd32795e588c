"""A run's parameters as stored: its ``grammar`` kept as the JSON text it was sent as.

PostgreSQL's ``jsonb`` (the ``params`` column there) gives an object's keys back in an order of its
own, while a JSON Schema's property order is the order the constrained output is written in
(``inference.sampling.stages.grammar``): a replay or "Open in playground" must send the same
order. So the grammar is stored as text and read back from it; a grammar stored as an object (a run
saved before) is read as it is. Everything but the column itself reads ``Run.parameters()``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

GRAMMAR = "grammar"


def stored_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters (an export's, a ``started`` event's) as the column holds them."""
    grammar = params.get(GRAMMAR)
    if grammar is None or isinstance(grammar, str):
        return dict(params)
    return {**params, GRAMMAR: json.dumps(grammar, ensure_ascii=False)}


def params_from_stored(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The column's parameters as they were run: the grammar an object again, in its own order."""
    grammar = stored.get(GRAMMAR)
    if not isinstance(grammar, str):
        return dict(stored)
    return {**stored, GRAMMAR: json.loads(grammar)}
