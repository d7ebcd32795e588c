"""How a stage describes itself (llama.cpp's ``llama_sampler_i`` idea, as plain data).

A stage module declares, beside its class, the ``SamplingParams`` fields it reads (``fields.py``:
name, default, range, what "off" is) and one ``Declaration``: the stage class, what it does in one
line, those fields, its on-rule (clauses that must all hold) and, only where the stage needs more
than its fields' values in their declared order (a seed, the vocabulary), a builder of its own. ``SamplingParams`` validates with the fields' ``check``; the stage
classes check their own arguments with the same objects; the default order, ``stage_enabled``, the
JSON Schema, the docs' stage table and the page's list are all read from the declarations
(``inference.sampling.stages.STAGES``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from inference.sampling.stages.base import Stage
from inference.sampling.stages.fields import Field


class Values(Protocol):
    """What the declarations read: any object with the fields as attributes (``SamplingParams``)."""

    def __getattr__(self, name: str) -> Any: ...


Builder = Callable[[Any, Sequence[str] | None], Stage]  # (values, the vocabulary's token texts or None) -> stage

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

    def holds(self, values: Values) -> bool:
        return _OPS[self.op](getattr(values, self.param), self.value)

    def to_json(self) -> dict[str, Any]:
        return (
            {"param": self.param, "op": self.op}
            if self.op == "nonempty"
            else {"param": self.param, "op": self.op, "value": self.value}
        )


@dataclass(frozen=True)
class StageIs:
    """A clause on another stage, declared before this one: whether that stage is on."""

    other: Declaration
    on: bool

    @property
    def stage(self) -> str:
        """The other stage's name."""
        return self.other.name

    def holds(self, values: Values) -> bool:
        return self.other.is_on(values) == self.on

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "on": self.on}


Clause = ParamIs | StageIs


@dataclass(frozen=True)
class Declaration:
    """Everything the rest of the code knows about one stage.

    ``stage``: its class (``stage.name`` is the stage's name); ``does``: what it does, one line;
    ``params``: the fields its ``__init__`` takes, in order; ``on``: the clauses that must all hold
    for it to be in a chain (its "off" test); ``switches``: fields only the on-rule reads (mirostat's
    version), not passed to the class; ``builder``: only for a stage whose ``__init__`` needs more
    than its fields' values (a seed, the vocabulary); ``ends_chain``: when it holds, no stage after
    this one runs (greedy temperature); ``title``: its name in words ("Nucleus (top-p)"); ``group``:
    the family of dials the page shows its fields in ("randomness", "truncation", "penalties";
    None: an editor of its own)."""

    stage: type[Stage]
    does: str
    params: tuple[Field, ...]
    on: tuple[Clause, ...]
    builder: Builder | None = None
    ends_chain: ParamIs | None = None
    switches: tuple[Field, ...] = ()
    title: str = ""
    group: str | None = None

    @property
    def name(self) -> str:
        return self.stage.name

    @property
    def fields(self) -> tuple[Field, ...]:
        """Every field the stage reads: its switches, then its class's arguments."""
        return (*self.switches, *self.params)

    def is_on(self, values: Values) -> bool:
        return all(clause.holds(values) for clause in self.on)

    def build(self, values: Values, token_texts: Sequence[str] | None = None) -> Stage:
        """The stage for ``values``: ``stage(*fields' values)`` unless the declaration has a builder."""
        if self.builder is not None:
            return self.builder(values, token_texts)
        return self.stage(*(getattr(values, f.name) for f in self.params))
