"""``SamplingParams``: the frozen, validated description of one run's sampler chain.

Every field is off by default; ``enabled_stages()`` says which stages a chain built from these
parameters will contain, in order, by the stages' declared on-rules (``stages.STAGES``).
Validation raises ``ParamError`` naming the field and its range.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from inference.errors import ParamError, excerpt
from inference.sampling.stages import STAGE_BY_NAME, STAGES, enabled_names, stage_fields
from inference.sampling.stages.fields import Field, Integer
from inference.sampling.stages.grammar import GrammarSpec

#: Stage names in their default order: the declarations' (see the package docstring for why).
DEFAULT_ORDER: tuple[str, ...] = tuple(stage.name for stage in STAGES)

MAX_SEED = 2**63 - 1
SEED = Integer(
    "seed",
    None,
    "null = drawn at random",
    nullable=True,
    low=0,
    high=MAX_SEED,
    words="in [0, 2^63-1] or null",
    definition="the run's seed (below).",
)

#: ``sampler_order``, which no stage declares, as ``field_facts`` and docs/sampling.md's parameter
#: table say it: its range, what leaves it doing nothing and what it does.
ORDER_RANGE = "list of stage names, no repeats"
ORDER_OFF = "the default order"
ORDER_DEFINITION = "the order of the stages (below)."

#: Every field but ``sampler_order``: the stages' declared fields, then the run's seed.
FIELDS: dict[str, Field] = {**stage_fields(), "seed": SEED}
_DEFAULT = {name: f.default for name, f in FIELDS.items()}

# When one of these holds, the chain ends after that stage (greedy temperature).
_ENDINGS = tuple(stage.ends_chain for stage in STAGES if stage.ends_chain is not None)


@dataclass(frozen=True)
class SamplingParams:
    """Sampler settings for one run. Each field's range, default, "off" value and exact definition are
    declared by the stage that reads it, beside its class (``FIELDS``); docs/sampling.md's parameter
    table is made from them (``param_table``)."""

    temperature: float = _DEFAULT["temperature"]
    top_k: int = _DEFAULT["top_k"]
    top_p: float = _DEFAULT["top_p"]
    min_p: float = _DEFAULT["min_p"]
    typical_p: float = _DEFAULT["typical_p"]
    top_n_sigma: float = _DEFAULT["top_n_sigma"]
    repetition_penalty: float = _DEFAULT["repetition_penalty"]
    frequency_penalty: float = _DEFAULT["frequency_penalty"]
    presence_penalty: float = _DEFAULT["presence_penalty"]
    penalty_window: int = _DEFAULT["penalty_window"]
    logit_bias: Mapping[int, float] = field(default_factory=lambda: _DEFAULT["logit_bias"], hash=False)
    dry_multiplier: float = _DEFAULT["dry_multiplier"]
    dry_base: float = _DEFAULT["dry_base"]
    dry_allowed_length: int = _DEFAULT["dry_allowed_length"]
    dry_penalty_last_n: int = _DEFAULT["dry_penalty_last_n"]
    dry_sequence_breakers: tuple[str, ...] = _DEFAULT["dry_sequence_breakers"]
    no_repeat_ngram_size: int = _DEFAULT["no_repeat_ngram_size"]
    epsilon_cutoff: float = _DEFAULT["epsilon_cutoff"]
    eta_cutoff: float = _DEFAULT["eta_cutoff"]
    xtc_probability: float = _DEFAULT["xtc_probability"]
    xtc_threshold: float = _DEFAULT["xtc_threshold"]
    mirostat: int = _DEFAULT["mirostat"]
    mirostat_tau: float = _DEFAULT["mirostat_tau"]
    mirostat_eta: float = _DEFAULT["mirostat_eta"]
    dynatemp_range: float = _DEFAULT["dynatemp_range"]
    dynatemp_exponent: float = _DEFAULT["dynatemp_exponent"]
    grammar: GrammarSpec | None = field(default=_DEFAULT["grammar"], hash=False)
    sampler_order: tuple[str, ...] = DEFAULT_ORDER
    seed: int | None = _DEFAULT["seed"]

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        for name, f in FIELDS.items():
            set_(name, f.check(getattr(self, name)))
        set_("sampler_order", _check_order(self.sampler_order))
        missing = [name for name in self.enabled_stages(ignore_order=True) if name not in self.sampler_order]
        if missing:
            raise ParamError("sampler_order", f"sampler_order must contain every enabled stage; missing {missing}")

    # -- construction from and to plain data ---------------------------------------------------

    @classmethod
    def field_names(cls) -> frozenset[str]:
        """The names ``from_dict`` accepts (so a caller can split a flat params dict)."""
        return frozenset(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SamplingParams:
        """Build from JSON-like data; unknown keys raise ``ParamError(code="unknown_param")``."""
        if not isinstance(data, Mapping):
            raise ParamError("params", f"params must be an object; got {type(data).__name__}")
        known = cls.field_names()
        for key in data:
            if key not in known:
                raise ParamError(str(key), f"unknown sampling parameter {key!r}", code="unknown_param")
        kwargs = dict(data)
        for key in ("sampler_order", "dry_sequence_breakers"):
            if key in kwargs and isinstance(kwargs[key], list):
                kwargs[key] = tuple(kwargs[key])
        return cls(**kwargs)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SamplingParams:
        """The parameters ``to_dict`` wrote, rebuilt without their range rules: those held where the
        request was made, so only the shape is checked here (a key this class does not name, a value
        not of the JSON type ``to_dict`` writes; ``ParamError`` naming the field). A field left out
        keeps its default. The stages still check their own arguments when a chain is built."""
        if not isinstance(data, Mapping):
            raise ParamError("params", f"params must be an object; got {type(data).__name__}")
        values = dict(_STORED_DEFAULTS)
        for name, value in data.items():
            if name not in values:
                raise ParamError(str(name), f"unknown sampling parameter {excerpt(name)}", code="unknown_param")
            f = FIELDS.get(name)  # None: sampler_order, which no stage declares
            if value is None and f is not None and f.nullable:
                values[name] = f.default
            elif name in _READ:
                values[name] = _READ[name](value)
            elif type(value) in FIELDS[name].carried:
                values[name] = value
            else:
                words = " or ".join(t.__name__ for t in FIELDS[name].carried)
                raise ParamError(name, f"a carried {name} must be a {words}, as to_dict writes it; got {excerpt(value)}")
        params = object.__new__(cls)
        for name, value in values.items():
            object.__setattr__(params, name, value)  # frozen; ``__post_init__``'s rules held where it was made
        return params

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready: a plain field's value as it is, the others as their kind writes
        them (tuples as lists, ``logit_bias`` keys as strings, the grammar as its source)."""
        out: dict[str, Any] = {}
        for name in _NAMES:
            value = getattr(self, name)
            out[name] = _WRITE[name](value) if name in _WRITE else value
        return out

    @classmethod
    def field_facts(cls) -> dict[str, dict[str, Any]]:
        """Read-only: every field's checked range and default as plain data, in field order.

        Each entry has ``kind`` ("number", "integer", "choice", "strings", "token_bias",
        "stage_order"), ``default`` (as ``to_dict`` writes it), ``off`` (what leaves it doing
        nothing, in words) and, by kind: ``low``/``high`` (None: unbounded) with ``low_open``/
        ``high_open``, ``nullable``, ``choices``, ``max_items``/``item_length``."""
        defaults = cls().to_dict()
        facts: dict[str, dict[str, Any]] = {}
        for name in defaults:
            if name == "sampler_order":
                fact = {"kind": "stage_order", "choices": DEFAULT_ORDER, "off": ORDER_OFF, "nullable": False}
            elif name in FIELDS:
                f = FIELDS[name]
                fact = {**f.facts(), "off": f.off, "nullable": f.nullable}
            else:
                raise TypeError(f"field_facts knows nothing of the field {name!r}: declare it in its stage's module")
            fact["default"] = defaults[name]
            facts[name] = fact
        return facts

    # -- which stages run -----------------------------------------------------------------------

    def stage_enabled(self, name: str) -> bool:
        """Whether the stage ``name`` changes anything with these values (its declared on-rule)."""
        return STAGE_BY_NAME[name].is_on(self)

    @property
    def greedy(self) -> bool:
        """T = 0: the chain ends at the temperature stage with a one-hot distribution."""
        return any(clause.holds(self) for clause in _ENDINGS)

    def enabled_stages(self, ignore_order: bool = False) -> tuple[str, ...]:
        """Names of the stages a chain runs, in ``sampler_order``; nothing after the chain ends (greedy)."""
        if ignore_order:
            return enabled_names(self, DEFAULT_ORDER, stop_at_end=False)
        return enabled_names(self, self.sampler_order)

    def validate_for_vocab(self, vocab_size: int) -> None:
        """Raise ``ParamError("logit_bias.<id>")`` if a biased token id is not below ``vocab_size``."""
        for token in self.logit_bias:
            if token >= vocab_size:
                raise ParamError(
                    f"logit_bias.{token}",
                    f"logit_bias token id must be in [0, {vocab_size - 1}]; got {token}",
                )


def _check_order(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ParamError("sampler_order", f"sampler_order must be a list of stage names from {list(DEFAULT_ORDER)}")
    seen: set[str] = set()
    for name in value:
        if not isinstance(name, str) or name not in DEFAULT_ORDER:
            raise ParamError("sampler_order", f"sampler_order: unknown stage {name!r}; stages are {list(DEFAULT_ORDER)}")
        if name in seen:
            raise ParamError("sampler_order", f"sampler_order: stage {name!r} appears twice")
        seen.add(name)
    return tuple(value)


_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(SamplingParams))
_STORED_DEFAULTS: dict[str, Any] = {name: getattr(SamplingParams(), name) for name in _NAMES}
# How ``to_dict`` writes the fields whose stored value is not its own JSON, and how ``from_json``
# reads them back; every other field is written and read as it is.
_WRITE: dict[str, Callable[[Any], Any]] = {"sampler_order": list} | {n: f.dump for n, f in FIELDS.items() if not f.plain}
_READ: dict[str, Callable[[Any], Any]] = {"sampler_order": _check_order} | {n: f.load for n, f in FIELDS.items() if not f.plain}
