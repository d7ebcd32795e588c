"""The typed jobs a client frame becomes (``playground.edge.frames`` parses them, once, at the edge) and
an inference worker serves: what both sides of the channel layer share.

A job crosses the channel layer as plain data (``playground.wire.channel_messages.job_to_dict``) and is
rebuilt on the worker as the same typed job. The flat ``params`` object is split between the
sampler chain and the stopping rules by one rule, ``split_params``, on both sides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inference.chat_template import ChatPrompt
from inference.decoding.generation import GenerationRequest
from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.errors import ParamError
from inference.sampling import SamplingParams
from playground.wire.events import TOKENIZE_PAGE


@dataclass(frozen=True)
class Branch:
    """A run labelled as a branch of a saved run at one of its token indexes (stored with the run)."""

    parent_run: str
    branch_index: int


@dataclass(frozen=True)
class Generate:
    request_id: str
    request: GenerationRequest
    branch: Branch | None = None
    save: bool = True  # false: the run is not saved (no run_id)
    model: str | None = None  # the served model's id (inference.model_catalog); None: the default

    @property
    def typed_tokens(self) -> int:
        """How many of the last prefix tokens the person typed (edit and continue)."""
        return self.request.typed_tokens


@dataclass(frozen=True)
class Tokenize:
    """Encode text exactly as ``generate`` would (``completion``/``chat``) or alone (``plain``)."""

    request_id: str
    text: str
    mode: str
    system: str | None
    offset: int = 0  # the page of the token list to answer with: ``limit`` tokens from ``offset``
    limit: int = TOKENIZE_PAGE[1]
    chat: ChatPrompt | None = None  # chat mode's conversation, as ``generate`` takes it
    model: str | None = None  # as ``Generate.model``


@dataclass(frozen=True)
class Inspect:
    """The chain's view of one position under one or more settings, from the real logits."""

    request_id: str
    prompt: str
    mode: str
    system: str | None
    prefix_tokens: tuple[int, ...]
    variants: tuple[tuple[SamplingParams, LoopParams], ...]
    top_n: int
    chat: ChatPrompt | None = None  # chat mode's conversation, as ``generate`` takes it
    model: str | None = None  # as ``Generate.model``


@dataclass(frozen=True)
class Score:
    """The prompt's own log-probabilities: each token's, given the tokens before it, with the
    ``top_n`` most likely tokens at each position."""

    request_id: str
    prompt: str
    mode: str
    system: str | None
    top_n: int
    chat: ChatPrompt | None = None
    model: str | None = None  # as ``Generate.model``


Job = Generate | Tokenize | Inspect | Score

QUICK_JOBS = (Tokenize, Inspect, Score)  # need no decode slot: served beside generations, not behind them


def is_quick(job: Job) -> bool:
    return isinstance(job, QUICK_JOBS)


SPECULATIVE = "speculative"  # the ``params`` key of a generate alone: neither the chain's nor the loop's


def split_generate_params(params: Mapping[str, Any]) -> tuple[SamplingParams, LoopParams, SpeculativeParams | None]:
    """A generate's ``params``: ``split_params`` of all but ``speculative``, and that one read by
    ``SpeculativeParams.from_value`` (null or absent: off). Speculation runs one sample: with
    ``n`` or ``num_beams`` above 1 it is refused (``ParamError`` on ``speculative``)."""
    sampling, loop = split_params({k: v for k, v in params.items() if k != SPECULATIVE})
    speculative = SpeculativeParams.from_value(params.get(SPECULATIVE))
    if speculative is not None and (loop.n > 1 or loop.num_beams > 1):
        field_name = "n" if loop.n > 1 else "num_beams"
        raise ParamError(SPECULATIVE, f"speculative decoding runs one sample: {field_name} must be 1 with it")
    return sampling, loop, speculative


def split_params(params: Mapping[str, Any]) -> tuple[SamplingParams, LoopParams]:
    """The flat ``params`` object split between the sampler chain and the stopping rules: a key the
    chain names is the chain's, every other key goes to the stopping rules, whose own check refuses
    a key neither names (``ParamError``, code ``unknown_param``). Each side's constructor checks
    its values."""
    sampling_keys = SamplingParams.field_names()
    return (
        SamplingParams.from_dict({k: v for k, v in params.items() if k in sampling_keys}),
        LoopParams.from_dict({k: v for k, v in params.items() if k not in sampling_keys}),
    )
