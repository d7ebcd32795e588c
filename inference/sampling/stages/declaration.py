"""How a stage describes itself (llama.cpp's ``llama_sampler_i`` idea, as plain data).

A stage module declares, beside its class, the ``SamplingParams`` fields it reads (``fields.py``:
name, default, range, what "off" is) and one ``Declaration``: the stage class, what it does in one
line, those fields, its on-rule (clauses that must all hold) and its builder. ``SamplingParams`` validates with the fields' ``check``; the stage
classes check their own arguments with the same objects; the default order, ``stage_enabled``, the
JSON Schema, the docs' stage table and the page's list are all read from the declarations
(``inference.sampling.stages.STAGES``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inference.sampling.stages.base import Stage
from inference.sampling.stages.fields import Field

if TYPE_CHECKING:  # (for type hints only: params.py reads the declarations)
    from inference.sampling.params import SamplingParams

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    "nonempty": lambda a, _: bool(a),
}


@dataclass(frozen=True)
class ParamIs:
    """A clause on one field: ``field op value`` (``nonempty``: the field holds something)."""

    param: str
    op: str
    value: Any = None

    def holds(self, params: SamplingParams) -> bool:
        return _OPS[self.op](getattr(params, self.param), self.value)

    def to_json(self) -> dict[str, Any]:
        return (
            {"param": self.param, "op": self.op}
            if self.op == "nonempty"
            else {"param": self.param, "op": self.op, "value": self.value}
        )


@dataclass(frozen=True)
class StageIs:
    """A clause on another stage: whether it is on."""

    stage: str
    on: bool

    def holds(self, params: SamplingParams) -> bool:
        return params.stage_enabled(self.stage) == self.on

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "on": self.on}


Clause = ParamIs | StageIs


@dataclass(frozen=True)
class Declaration:
    """Everything the rest of the code knows about one stage.

    ``stage``: its class (``stage.name`` is the stage's name); ``does``: what it does, one line;
    ``params``: the fields it reads; ``on``: the clauses that must all hold for it to be in a chain
    (its "off" test); ``build(params, token_texts)``: the stage for those params;
    ``ends_chain``: when it holds, no stage after this one runs (greedy temperature)."""

    stage: type[Stage]
    does: str
    params: tuple[Field, ...]
    on: tuple[Clause, ...]
    build: Callable[[SamplingParams, Sequence[str] | None], Stage]
    ends_chain: ParamIs | None = None

    @property
    def name(self) -> str:
        return self.stage.name

    def is_on(self, params: SamplingParams) -> bool:
        return all(clause.holds(params) for clause in self.on)
