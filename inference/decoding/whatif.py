"""What-if: the sampler chain re-run, under other settings, on the model's real logits at one position.

The page's sliders and temperature explorer ask "what would this step's distribution be with
these parameters?". The answer comes from the real logits for that position (prompt + the tokens
generated before it), recomputed by the decoder when they are not in the small cache, never from a
toy vocabulary.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from inference.decoding.loop_params import LoopParams
from inference.decoding.program import hold_off_end, penalized_history
from inference.decoding.request import check_prefix
from inference.errors import Cancelled, ParamError
from inference.prefill import prefill
from inference.runtime import Runtime
from inference.sampling import SamplerChain, SamplingParams, StepTrace


@dataclass(frozen=True)
class Variant:
    """One setting's view of the position: the chain's trace and the most likely tokens after it."""

    params: SamplingParams
    trace: StepTrace
    top_final: tuple[tuple[int, float], ...]  # (token id, final probability), most likely first


__all__ = ["Cancelled", "LogitsCache", "Variant", "inspect_position", "inspect_variants"]


class LogitsCache:
    """The logits [V] of recently inspected positions, keyed by the ids that lead to them.

    A position is computed the way a run computes it: the prompt by ``inference.prefill`` (in the
    same chunks), then the generated tokens one at a time. ONNX Runtime's 4-bit kernels give logits that depend (by up to ~0.7 on
    this model) on how the sequence was split into calls, so any other route would show numbers
    that differ from the run being inspected. Every position passed on the way is kept too, so
    inspecting the other tokens of the same run is immediate.
    """

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple[int, ...], np.ndarray] = OrderedDict()

    def logits(
        self,
        runtime: Runtime,
        prompt_ids: Sequence[int],
        generated: Sequence[int],
        is_cancelled: Callable[[], bool] = lambda: False,
    ) -> np.ndarray:
        """The logits after ``prompt_ids`` + ``generated``; raises ``Cancelled`` when asked to stop
        (checked before every token, so a long path stops within one)."""
        key = (*prompt_ids, *generated)
        cached = self._entries.get(key)
        if cached is not None:
            self._entries.move_to_end(key)
            return cached
        state = runtime.decoder.new_state()
        path = tuple(prompt_ids)
        logits = self._keep(path, prefill(state, list(prompt_ids), is_cancelled)[0])
        for token in generated:
            if is_cancelled():
                raise Cancelled("the inspection was cancelled")
            path = (*path, token)
            logits = self._keep(path, state.append_tokens([token])[0])
        return logits

    def _keep(self, key: tuple[int, ...], logits: np.ndarray) -> np.ndarray:  # logits: [V]
        logits.setflags(write=False)
        self._entries[key] = logits
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return logits


def inspect_position(
    logits: np.ndarray,  # [V] at the position
    history: Sequence[int],
    variants: Sequence[SamplingParams],
    token_texts: Sequence[str],
    top_n: int,
    generated: Sequence[int] = (),
) -> list[Variant]:
    """The chain's trace for each setting, plus the ``top_n`` tokens most likely after all stages.
    ``generated``: the tokens generated before the position (a grammar starts after them)."""
    results = []
    for params in variants:
        chain = SamplerChain(params, token_texts=token_texts)
        chain.follow(generated)
        trace = chain.trace(logits, history, top_n=top_n)
        final = chain.distribution(logits, history)  # float64 [V]
        top = np.argpartition(-final, top_n)[:top_n] if top_n < final.size else np.arange(final.size)
        top = sorted((int(i) for i in top if final[i] > 0), key=lambda i: (-final[i], i))
        results.append(Variant(params, trace, tuple((i, float(final[i])) for i in top)))
    return results


def inspect_variants(
    runtime: Runtime,
    prompt_ids: list[int],
    generated: Sequence[int],
    variants: Sequence[tuple[SamplingParams, LoopParams]],
    top_n: int,
    cache: LogitsCache,
    is_cancelled: Callable[[], bool] = lambda: False,
) -> list[Variant]:
    """The position after ``prompt_ids`` + ``generated`` as each setting's run would see it there:
    the checks a run makes (context window, token ids, vocabulary), then its rules for the chain's
    input (``generation.hold_off_end``: no end of sequence before ``min_tokens`` new tokens;
    ``generation.penalized_history``: what the penalties count)."""
    prefix = list(generated)
    ids = prompt_ids + prefix
    if len(ids) > runtime.shape.context_window:
        raise ParamError(
            "prefix_tokens",
            f"the prompt and prefix_tokens are {len(ids)} tokens; the context window is {runtime.shape.context_window}",
            code="prompt_too_long",
        )
    check_prefix(tuple(prefix), runtime.shape.vocab_size)
    for sampling, _ in variants:
        sampling.validate_for_vocab(runtime.shape.vocab_size)
    logits = cache.logits(runtime, prompt_ids, prefix, is_cancelled)
    results = []
    for sampling, loop in variants:
        seen = hold_off_end(logits, loop, len(prefix), runtime.codec.eos_ids)
        history = penalized_history(loop, prompt_ids, prefix)
        results += inspect_position(seen, history, [sampling], runtime.codec.token_texts(), top_n, generated=prefix)
    return results
