"""The typed jobs a client frame becomes (``playground.edge.frames`` parses them, once, at the edge) and
an inference worker serves: what both sides of the channel layer share.

A job crosses the channel layer as plain data (``playground.wire.channel_messages.job_to_dict``) and is
rebuilt on the worker as the same typed job. A generation's request is the inference side's own
type (``inference.decoding.request.GenerationRequest``: checked once, carried by its ``to_json``).
"""

from __future__ import annotations

from dataclasses import dataclass

from inference.chat_template import ChatPrompt
from inference.decoding.loop_params import LoopParams
from inference.decoding.request import GenerationRequest
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
