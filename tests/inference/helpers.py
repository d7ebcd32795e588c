"""Helpers for the generation, beam search and what-if tests: drive a run to its end, and watch
the real decoder's calls without changing them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from inference.decoding.beam import BeamStep
from inference.decoding.generation import Finished, GenerationRequest, Started, TokenStep, run
from inference.engine import Decoder, DecodeState
from inference.runtime import Runtime


def collect(
    runtime: Runtime, request: GenerationRequest, is_cancelled: Callable[[], bool] = lambda: False
) -> tuple[Started, list[TokenStep], Finished]:
    """Runs ``request`` to its end: what started, every token step in order, and the summary."""
    items = list(run(runtime, request, is_cancelled))
    started, finished = items[0], items[-1]
    assert isinstance(started, Started) and isinstance(finished, Finished)
    steps = [item for item in items if isinstance(item, TokenStep)]
    assert len(steps) == len(items) - 2, "a sampling run yields only Started, TokenSteps and Finished"
    return started, steps, finished


def collect_beams(
    runtime: Runtime, request: GenerationRequest, is_cancelled: Callable[[], bool] = lambda: False
) -> tuple[Started, list[BeamStep], Finished]:
    items = list(run(runtime, request, is_cancelled))
    started, finished = items[0], items[-1]
    assert isinstance(started, Started) and isinstance(finished, Finished)
    steps = [item for item in items if isinstance(item, BeamStep)]
    assert len(steps) == len(items) - 2, "a beam search yields only Started, BeamSteps and Finished"
    return started, steps, finished


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """[V] → float64 [V] log-probabilities, computed here rather than by the code under test."""
    x = np.asarray(logits, dtype=np.float64)
    x = x - x.max()
    return x - np.log(np.exp(x).sum())


def softmax(logits: np.ndarray) -> np.ndarray:
    return np.exp(log_softmax(logits))


def logits_along(runtime: Runtime, context: Sequence[int], tokens: Sequence[int]) -> list[np.ndarray]:
    """The logits [V] after ``context``, then after each of ``tokens`` in turn, from a fresh
    one-row decoder state fed the way a run feeds it (the context in one call, then one token per call)."""
    state = runtime.decoder.new_state()
    out = [state.append_tokens(list(context))[0]]
    for token in tokens:
        out.append(state.append_tokens([token])[0])
    return out


def rescore(runtime: Runtime, context: Sequence[int], tokens: Sequence[int]) -> float:
    """The cumulative log-probability of ``tokens`` after ``context``, recomputed independently."""
    steps = logits_along(runtime, context, tokens[:-1]) if tokens else []
    return float(sum(log_softmax(logits)[token] for logits, token in zip(steps, tokens)))


@dataclass
class Call:
    """One ``append_tokens`` call: the ids fed [B, S] and the logits it returned [B, V]."""

    ids: np.ndarray
    logits: np.ndarray


@dataclass
class RecordingState:
    """A real ``DecodeState`` whose calls are kept, so a test can compare a run with its logits."""

    inner: DecodeState
    calls: list[Call] = field(default_factory=list)

    @property
    def batch_size(self) -> int:
        return self.inner.batch_size

    @property
    def use_cache(self) -> bool:
        return self.inner.use_cache

    @property
    def length(self) -> int:
        return self.inner.length

    def append_tokens(self, new_ids):
        logits = self.inner.append_tokens(new_ids)
        block = np.asarray(new_ids, dtype=np.int64)
        if block.ndim == 1:
            block = np.broadcast_to(block, (self.inner.batch_size, block.shape[0]))
        self.calls.append(Call(block.copy(), logits.copy()))
        return logits

    def reorder(self, rows):
        self.inner.reorder(rows)


class RecordingDecoder:
    """The real decoder; every state it makes is a ``RecordingState`` kept in ``states``."""

    def __init__(self, decoder: Decoder) -> None:
        self.inner = decoder
        self.shape = decoder.shape
        self.states: list[RecordingState] = []

    def new_state(self, batch_size: int = 1, use_cache: bool = True) -> RecordingState:
        state = RecordingState(self.inner.new_state(batch_size=batch_size, use_cache=use_cache))
        self.states.append(state)
        return state

    @property
    def calls(self) -> list[Call]:
        return [call for state in self.states for call in state.calls]


def recording(runtime: Runtime) -> tuple[Runtime, RecordingDecoder]:
    """The same runtime with its decoder's calls recorded."""
    decoder = RecordingDecoder(runtime.decoder)
    return replace(runtime, decoder=decoder), decoder  # type: ignore[arg-type]


def single_token(runtime: Runtime, text: str) -> int:
    """The id of the one token that spells ``text``."""
    ids = runtime.codec.encode(text, "plain")
    assert len(ids) == 1, f"{text!r} is {len(ids)} tokens in this vocabulary"
    return ids[0]
