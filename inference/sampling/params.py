"""``SamplingParams``: the frozen, validated description of one run's sampler chain.

Every field is off by default; ``enabled_stages()`` says which stages a chain built from these
parameters will contain, in order. Validation raises ``ParamError`` naming the field and its range.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from inference.errors import ParamError

#: Stage names in their default order (see the package docstring for why).
DEFAULT_ORDER: tuple[str, ...] = (
    "logit_bias",
    "repetition_penalty",
    "frequency_penalty",
    "presence_penalty",
    "dry",
    "no_repeat_ngram",
    "top_n_sigma",
    "temperature",
    "dynamic_temperature",
    "top_k",
    "top_p",
    "min_p",
    "typical_p",
    "epsilon_cutoff",
    "eta_cutoff",
    "xtc",
    "mirostat",
)

#: llama.cpp's default DRY sequence breakers.
DEFAULT_DRY_BREAKERS: tuple[str, ...] = ("\n", ":", '"', "*")

MAX_SEED = 2**63 - 1
MAX_FLOAT_INT = 2**1023  # integers beyond this overflow a float
MAX_BREAKERS = 32
BREAKER_LENGTH = (1, 64)
LOGIT_BIAS_RANGE = (-100.0, 100.0)
MIROSTAT_CHOICES = (0, 2)  # off, mirostat v2
INF = math.inf

# name -> (low, low_open, high, high_open, what "off" is); ranges are checked on finite numbers.
_FLOATS: dict[str, tuple[float, bool, float, bool, str]] = {
    "temperature": (0.0, False, 2.0, False, "1 = unchanged, 0 = greedy"),
    "top_p": (0.0, True, 1.0, False, "1 = off"),
    "min_p": (0.0, False, 1.0, False, "0 = off"),
    "typical_p": (0.0, True, 1.0, False, "1 = off"),
    "top_n_sigma": (0.0, False, INF, True, "0 or null = off"),
    "repetition_penalty": (0.0, True, INF, True, "1 = off"),
    "frequency_penalty": (-2.0, False, 2.0, False, "0 = off"),
    "presence_penalty": (-2.0, False, 2.0, False, "0 = off"),
    "dry_multiplier": (0.0, False, INF, True, "0 = off"),
    "dry_base": (1.0, False, INF, True, "default 1.75"),
    "epsilon_cutoff": (0.0, False, 1.0, True, "0 = off"),
    "eta_cutoff": (0.0, False, 1.0, True, "0 = off"),
    "xtc_probability": (0.0, False, 1.0, False, "0 = off"),
    "xtc_threshold": (0.0, False, 1.0, False, "default 0.1"),
    "mirostat_tau": (0.0, True, INF, True, "default 5"),
    "mirostat_eta": (0.0, False, 1.0, False, "default 0.1"),
    "dynatemp_range": (0.0, False, 2.0, False, "0 = off"),
    "dynatemp_exponent": (0.0, False, INF, True, "default 1"),
}

# name -> (low, high or None, what "off" is)
_INTS: dict[str, tuple[int, int | None, str]] = {
    "top_k": (0, None, "0 = off"),
    "penalty_window": (0, None, "0 = the whole history"),
    "dry_allowed_length": (1, None, "default 2"),
    "dry_penalty_last_n": (-1, None, "-1 = the whole history, 0 = off"),
    "no_repeat_ngram_size": (0, None, "0 = off"),
}


def _interval(lo: float, lo_open: bool, hi: float, hi_open: bool) -> str:
    if hi == INF:
        return f"> {lo:g}" if lo_open else f">= {lo:g}"
    return f"in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    if isinstance(v, int):
        return abs(v) <= MAX_FLOAT_INT  # a larger integer has no float: math.isfinite would raise
    return math.isfinite(v)


@dataclass(frozen=True)
class SamplingParams:
    """Sampler settings for one run. Every field's range and exact meaning is in docs/sampling.md."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    typical_p: float = 1.0
    top_n_sigma: float = 0.0
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    penalty_window: int = 0
    logit_bias: Mapping[int, float] = field(default_factory=dict, hash=False)
    dry_multiplier: float = 0.0
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    dry_penalty_last_n: int = -1
    dry_sequence_breakers: tuple[str, ...] = DEFAULT_DRY_BREAKERS
    no_repeat_ngram_size: int = 0
    epsilon_cutoff: float = 0.0
    eta_cutoff: float = 0.0
    xtc_probability: float = 0.0
    xtc_threshold: float = 0.1
    mirostat: int = 0
    mirostat_tau: float = 5.0
    mirostat_eta: float = 0.1
    dynatemp_range: float = 0.0
    dynatemp_exponent: float = 1.0
    sampler_order: tuple[str, ...] = DEFAULT_ORDER
    seed: int | None = None

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        if self.top_n_sigma is None:
            set_("top_n_sigma", 0.0)
        for name, (lo, lo_open, hi, hi_open, off) in _FLOATS.items():
            v = getattr(self, name)
            ok = _is_number(v) and (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
            if not ok:
                rng = _interval(lo, lo_open, hi, hi_open)
                raise ParamError(name, f"{name} must be a number {rng} ({off}); got {v!r}")
            set_(name, float(v))
        for name, (lo, hi, off) in _INTS.items():
            v = getattr(self, name)
            if not _is_int(v) or v < lo or (hi is not None and v > hi):
                rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
                raise ParamError(name, f"{name} must be an integer {rng} ({off}); got {v!r}")
        if not _is_int(self.mirostat) or self.mirostat not in MIROSTAT_CHOICES:
            raise ParamError("mirostat", f"mirostat must be 0 (off) or 2 (mirostat v2); got {self.mirostat!r}")
        if self.seed is not None and (not _is_int(self.seed) or not 0 <= self.seed <= MAX_SEED):
            raise ParamError("seed", f"seed must be an integer in [0, 2^63-1] or null; got {self.seed!r}")
        set_("logit_bias", _check_logit_bias(self.logit_bias))
        set_("dry_sequence_breakers", _check_breakers(self.dry_sequence_breakers))
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

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready: tuples as lists, ``logit_bias`` keys as strings."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "logit_bias":
                v = {str(k): b for k, b in v.items()}
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
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
            if name in _FLOATS:
                lo, lo_open, hi, hi_open, off = _FLOATS[name]
                fact = {
                    "kind": "number",
                    "low": lo,
                    "low_open": lo_open,
                    "high": None if hi == INF else hi,
                    "high_open": hi_open,
                    "off": off,
                }
            elif name in _INTS:
                lo, hi, off = _INTS[name]
                fact = {"kind": "integer", "low": lo, "low_open": False, "high": hi, "high_open": False, "off": off}
            elif name == "seed":
                fact = {
                    "kind": "integer",
                    "low": 0,
                    "low_open": False,
                    "high": MAX_SEED,
                    "high_open": False,
                    "off": "null = drawn at random",
                }
            elif name == "mirostat":
                fact = {"kind": "choice", "choices": MIROSTAT_CHOICES, "off": "0 = off, 2 = mirostat v2"}
            elif name == "logit_bias":
                lo, hi = LOGIT_BIAS_RANGE
                fact = {"kind": "token_bias", "low": lo, "low_open": False, "high": hi, "high_open": False, "off": "{} = off"}
            elif name == "dry_sequence_breakers":
                fact = {
                    "kind": "strings",
                    "max_items": MAX_BREAKERS,
                    "item_length": BREAKER_LENGTH,
                    "off": "default: newline, colon, quote, asterisk",
                }
            elif name == "sampler_order":
                fact = {"kind": "stage_order", "choices": DEFAULT_ORDER, "off": "the default order"}
            else:
                raise TypeError(f"field_facts knows nothing of the field {name!r}: add it")
            fact["nullable"] = name in ("seed", "top_n_sigma")
            fact["default"] = defaults[name]
            facts[name] = fact
        return facts

    # -- which stages run -----------------------------------------------------------------------

    def stage_enabled(self, name: str) -> bool:
        """Whether the stage ``name`` changes anything with these values (its "off" test)."""
        dynamic = self.dynatemp_range > 0 and self.temperature > 0
        return {
            "logit_bias": bool(self.logit_bias),
            "repetition_penalty": self.repetition_penalty != 1.0,
            "frequency_penalty": self.frequency_penalty != 0.0,
            "presence_penalty": self.presence_penalty != 0.0,
            "dry": self.dry_multiplier > 0 and self.dry_penalty_last_n != 0,
            "no_repeat_ngram": self.no_repeat_ngram_size > 0,
            "top_n_sigma": self.top_n_sigma > 0,
            "temperature": self.temperature != 1.0 and not dynamic,
            "dynamic_temperature": dynamic,
            "top_k": self.top_k > 0,
            "top_p": self.top_p < 1.0,
            "min_p": self.min_p > 0,
            "typical_p": self.typical_p < 1.0,
            "epsilon_cutoff": self.epsilon_cutoff > 0,
            "eta_cutoff": self.eta_cutoff > 0,
            "xtc": self.xtc_probability > 0,
            "mirostat": self.mirostat == 2,
        }[name]

    @property
    def greedy(self) -> bool:
        """T = 0: the chain ends at the temperature stage with a one-hot distribution."""
        return self.temperature == 0.0

    def enabled_stages(self, ignore_order: bool = False) -> tuple[str, ...]:
        """Names of the stages a chain runs, in ``sampler_order``; nothing after greedy temperature."""
        names = DEFAULT_ORDER if ignore_order else self.sampler_order
        out: list[str] = []
        for name in names:
            if self.stage_enabled(name):
                out.append(name)
                if name == "temperature" and self.greedy and not ignore_order:
                    break
        return tuple(out)

    def validate_for_vocab(self, vocab_size: int) -> None:
        """Raise ``ParamError("logit_bias.<id>")`` if a biased token id is not below ``vocab_size``."""
        for token in self.logit_bias:
            if token >= vocab_size:
                raise ParamError(
                    f"logit_bias.{token}",
                    f"logit_bias token id must be in [0, {vocab_size - 1}]; got {token}",
                )


def _check_logit_bias(value: Any) -> Mapping[int, float]:
    if not isinstance(value, Mapping):
        raise ParamError("logit_bias", "logit_bias must be an object {token id: bias}")
    out: dict[int, float] = {}
    for key, bias in value.items():
        if _is_int(key):
            token = key
        elif isinstance(key, str) and key.isascii() and key.isdigit():
            token = int(key)
        else:
            raise ParamError(f"logit_bias.{key}", f"logit_bias keys must be token ids (integers >= 0); got {key!r}")
        if token < 0:
            raise ParamError(f"logit_bias.{key}", f"logit_bias keys must be token ids (integers >= 0); got {key!r}")
        low, high = LOGIT_BIAS_RANGE
        if not _is_number(bias) or not low <= bias <= high:
            raise ParamError(f"logit_bias.{token}", f"logit_bias values must be numbers in [{low:g}, {high:g}]; got {bias!r}")
        out[token] = float(bias)
    return types.MappingProxyType(dict(sorted(out.items())))


def _check_breakers(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ParamError("dry_sequence_breakers", "dry_sequence_breakers must be a list of strings")
    low, high = BREAKER_LENGTH
    if len(value) > MAX_BREAKERS or not all(isinstance(s, str) and low <= len(s) <= high for s in value):
        raise ParamError(
            "dry_sequence_breakers",
            f"dry_sequence_breakers must be at most {MAX_BREAKERS} strings of {low}-{high} characters",
        )
    return tuple(value)


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
