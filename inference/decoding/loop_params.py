"""The generation loop's own parameters, apart from the sampler chain's: length, stopping, search."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from inference.errors import ParamError
from inference.models import served_entries

MAX_STOP_STRINGS = 8
STOP_STRING_LENGTH = (1, 64)
MAX_SAMPLES = 8
MAX_BEAMS = 8
LENGTH_PENALTY = (-5.0, 5.0)
# name -> (low, high or None) of the integer fields
_INT_RANGES: dict[str, tuple[int, int | None]] = {
    "max_tokens": (1, None),
    "min_tokens": (0, None),
    "n": (1, MAX_SAMPLES),
    "num_beams": (1, MAX_BEAMS),
}
# name -> what leaves it doing nothing (or its default), in words
_OFF: dict[str, str] = {
    "max_tokens": "default {default}",
    "min_tokens": "0 = off",
    "stop": "none",
    "ignore_eos": "off",
    "penalize_prompt": "off",
    "n": "1 = one sample",
    "num_beams": "1 = sampling, no beam search",
    "length_penalty": "default {default:g}",
}


@dataclass(frozen=True)
class LoopParams:
    """``max_tokens`` generated tokens at most; ``min_tokens`` before end-of-sequence or a stop
    string may end the run; ``stop`` strings matched on the decoded text; ``ignore_eos`` keeps going
    past the model's end-of-sequence token; ``penalize_prompt`` lets the penalties see the prompt's
    tokens as well as the generated ones; ``n`` independent samples decoded as one batch, sample i
    seeded with (seed + i) mod 2^63; ``num_beams`` > 1 runs beam search instead of sampling, ranking finished
    beams by cumulative log-probability / length ** ``length_penalty``."""

    max_tokens: int = 256
    min_tokens: int = 0
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False
    penalize_prompt: bool = False
    n: int = 1
    num_beams: int = 1
    length_penalty: float = 1.0

    def __post_init__(self) -> None:
        _check_int("max_tokens", self.max_tokens, *_INT_RANGES["max_tokens"])
        _check_int("min_tokens", self.min_tokens, *_INT_RANGES["min_tokens"])
        if self.min_tokens > self.max_tokens:
            raise ParamError("min_tokens", f"min_tokens must be at most max_tokens ({self.max_tokens}), got {self.min_tokens}")
        if not isinstance(self.stop, tuple) or len(self.stop) > MAX_STOP_STRINGS:
            raise ParamError("stop", f"stop must be a list of at most {MAX_STOP_STRINGS} strings")
        low, high = STOP_STRING_LENGTH
        for i, item in enumerate(self.stop):
            if not isinstance(item, str) or not low <= len(item) <= high:
                raise ParamError(f"stop.{i}", f"stop.{i} must be a string of {low} to {high} characters, got {item!r}")
        for name in ("ignore_eos", "penalize_prompt"):
            if not isinstance(getattr(self, name), bool):
                raise ParamError(name, f"{name} must be true or false, got {getattr(self, name)!r}")
        _check_int("n", self.n, *_INT_RANGES["n"])
        _check_int("num_beams", self.num_beams, *_INT_RANGES["num_beams"])
        if self.n > 1 and self.num_beams > 1:
            raise ParamError("num_beams", "num_beams must be 1 when n is above 1: choose sampling or beam search")
        low_lp, high_lp = LENGTH_PENALTY
        lp = self.length_penalty
        if isinstance(lp, bool) or not isinstance(lp, (int, float)) or not low_lp <= lp <= high_lp:
            raise ParamError("length_penalty", f"length_penalty must be a number from {low_lp:g} to {high_lp:g}, got {lp!r}")

    @classmethod
    def field_names(cls) -> frozenset[str]:
        return frozenset(f.name for f in fields(cls))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoopParams:
        unknown = sorted(set(data) - cls.field_names())
        if unknown:
            raise ParamError(unknown[0], f"unknown parameter {unknown[0]!r}", code="unknown_param")
        values = dict(data)
        if "stop" in values:
            stop = values["stop"]
            if isinstance(stop, str):
                stop = [stop]
            if not isinstance(stop, (list, tuple)):
                raise ParamError("stop", f"stop must be a string or a list of at most {MAX_STOP_STRINGS} strings")
            values["stop"] = tuple(stop)
        return cls(**values)

    @classmethod
    def field_facts(cls) -> dict[str, dict[str, Any]]:
        """Read-only: every field's checked range and default as plain data, in field order, in the
        shape of ``SamplingParams.field_facts`` (kinds "integer", "number", "boolean", "strings")."""
        facts: dict[str, dict[str, Any]] = {}
        for name, default in cls().to_dict().items():
            if name in _INT_RANGES:
                low, high = _INT_RANGES[name]
                fact = {"kind": "integer", "low": low, "low_open": False, "high": high, "high_open": False}
            elif name == "length_penalty":
                low_lp, high_lp = LENGTH_PENALTY
                fact = {"kind": "number", "low": low_lp, "low_open": False, "high": high_lp, "high_open": False}
            elif name == "stop":
                fact = {"kind": "strings", "max_items": MAX_STOP_STRINGS, "item_length": STOP_STRING_LENGTH}
            elif name in ("ignore_eos", "penalize_prompt"):
                fact = {"kind": "boolean"}
            else:
                raise TypeError(f"field_facts knows nothing of the field {name!r}: add it")
            facts[name] = {**fact, "off": _OFF[name].format(default=default), "nullable": False, "default": default}
        return facts

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["stop"] = list(self.stop)
        return data

    def check_context(self, prompt_tokens: int, context_window: int) -> None:
        """Raises when the prompt and ``max_tokens`` do not fit in the context window."""
        room = context_window - prompt_tokens
        if room < 1:
            raise ParamError(
                "prompt",
                f"the prompt is {prompt_tokens} tokens; the context window of {context_window} leaves no room to generate",
                code="prompt_too_long",
            )
        if self.max_tokens > room:
            raise ParamError(
                "max_tokens",
                f"max_tokens must be between 1 and {room} for this {prompt_tokens}-token prompt "
                f"(context window {context_window}), got {self.max_tokens}",
                code="prompt_too_long",
            )


# The draft models a run may name, from the registry entries' ``drafts``: name → (the model it drafts
# for, the build variant it is). Each is built beside that model, in ``<model id>-<variant>``
# (``manage.py build_model --served`` builds the served models' drafts; by hand: ``python -m
# inference.modelbuild --variant fast --model-dir .models/smollm2-135m-instruct-fast``).
DRAFT_BUILDS: dict[str, tuple[str, str]] = {d.name: (e.id, d.variant) for e in served_entries() for d in e.drafts}
DRAFT_MODELS: dict[str, str] = {name: f"{model}-{variant}" for name, (model, variant) in DRAFT_BUILDS.items()}
DRAFT_SOURCES = ("prompt_lookup", *DRAFT_MODELS)  # inference.speculative: the sources a run may name
DRAFT_LENGTH = (1, 8)  # k: tokens drafted per verification


@dataclass(frozen=True)
class SpeculativeParams:
    """Speculative decoding: ``draft`` names where drafted tokens come from, ``k`` how many are
    drafted before the model verifies them in one pass. The output is distributed exactly as
    without it (greedy: the same tokens); only the speed and the per-step record differ.
    ``switch_off``: the rule that stops drafting where it cannot pay (``inference.speculative.switch_off``:
    before the first draft when even a fully accepted pass costs more than it makes, or later for
    low acceptance); false keeps drafting whatever it costs, to watch the drafts at work."""

    draft: str = "prompt_lookup"
    k: int = 4
    switch_off: bool = True

    def __post_init__(self) -> None:
        if self.draft not in DRAFT_SOURCES:
            raise ParamError("speculative.draft", f"speculative.draft must be one of {list(DRAFT_SOURCES)}, got {self.draft!r}")
        _check_int("speculative.k", self.k, *DRAFT_LENGTH)
        if not isinstance(self.switch_off, bool):
            raise ParamError("speculative.switch_off", f"speculative.switch_off must be true or false, got {self.switch_off!r}")

    @classmethod
    def from_value(cls, value: Any) -> SpeculativeParams | None:
        """``{"draft": …, "k": …, "switch_off": …}`` (any key may be left out), or None for off."""
        if value is None or isinstance(value, SpeculativeParams):
            return value
        if not isinstance(value, Mapping):
            raise ParamError(
                "speculative", f"speculative must be an object like {{'draft': 'prompt_lookup', 'k': 4}} or null, got {value!r}"
            )
        unknown = sorted(set(value) - {"draft", "k", "switch_off"})
        if unknown:
            raise ParamError(f"speculative.{unknown[0]}", f"unknown parameter speculative.{unknown[0]}", code="unknown_param")
        return cls(**value)

    @classmethod
    def field_facts(cls) -> dict[str, Any]:
        """Read-only: the checked choices and range, in the shape of ``LoopParams.field_facts``."""
        low, high = DRAFT_LENGTH
        return {
            "kind": "speculative",
            "draft": {"kind": "choice", "choices": list(DRAFT_SOURCES), "default": cls.draft},
            "k": {"kind": "integer", "low": low, "low_open": False, "high": high, "high_open": False, "default": cls.k},
            "switch_off": {"kind": "boolean", "default": cls.switch_off},
            "off": "null = off",
            "nullable": True,
            "default": None,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check_int(name: str, value: object, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(name, f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        upper = "" if high is None else f" and at most {high}"
        raise ParamError(name, f"{name} must be at least {low}{upper}, got {value}")
