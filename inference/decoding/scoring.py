"""A prompt's own log-probabilities: how likely the model finds each of its tokens after the ones
before it (what evaluation harnesses read as a text's log-likelihood).

The prompt is fed in chunks with the logits of every position kept (``append_tokens(all_logits=True)``),
the cancel flag checked between chunks. Position i's log-probability is log-softmax of the logits
after tokens 0..i-1, at token i; the first token has none (nothing comes before it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from inference.errors import Cancelled, ParamError
from inference.runtime import Runtime

SCORE_CHUNK = 128  # positions per decoder call: [128, V] float32 logits are 25 MB at V = 49,152


@dataclass(frozen=True)
class TokenScore:
    token_id: int
    logprob: float | None  # None for the first token: nothing comes before it
    top: tuple[tuple[int, float], ...]  # the most likely tokens at this position: (id, logprob), best first
    entropy: float | None = None  # nats, of the model's distribution at this position (None for the first token)
    rank: int | None = None  # 1: the most likely token there (ties: lower id first); None for the first token


def score_prompt(
    runtime: Runtime, ids: list[int], top_n: int, is_cancelled: Callable[[], bool] = lambda: False
) -> list[TokenScore]:
    """Every token of ``ids`` with its log-probability given the tokens before it."""
    if not ids:
        raise ParamError("prompt", "there is no token to score")
    window = runtime.shape.context_window
    if len(ids) > window:
        raise ParamError("prompt", f"the prompt is {len(ids)} tokens; the context window is {window}", code="prompt_too_long")
    state = runtime.decoder.new_state(batch_size=1)
    scores = [TokenScore(ids[0], None, ())]
    for begin in range(0, len(ids) - 1, SCORE_CHUNK):
        if is_cancelled():
            raise Cancelled("cancelled while scoring the prompt")
        chunk = ids[begin : begin + SCORE_CHUNK]
        logits = state.append_tokens(chunk, all_logits=True)[0].astype(np.float64)  # [S, V]
        peak = logits.max(axis=-1, keepdims=True)
        log_probs = logits - peak - np.log(np.exp(logits - peak).sum(axis=-1, keepdims=True))  # [S, V]
        for offset, row in enumerate(log_probs):
            position = begin + offset + 1
            if position >= len(ids):
                break
            candidates = np.argpartition(-row, top_n - 1)[:top_n] if top_n < row.shape[0] else np.arange(row.shape[0])
            best = sorted(candidates.tolist(), key=lambda i: (-row[i], i))  # highest first, ties: lower id
            top = tuple((int(i), float(row[i])) for i in best)
            own = row[ids[position]]
            rank = 1 + int(np.count_nonzero(row > own)) + int(np.count_nonzero(row[: ids[position]] == own))
            finite = np.isfinite(row)
            entropy = float(-(np.exp(row[finite]) * row[finite]).sum())  # -sum p ln p, tokens the model rules out add 0
            scores.append(TokenScore(ids[position], float(own), top, entropy, rank))
    return scores
