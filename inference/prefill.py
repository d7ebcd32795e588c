"""The prefill: a prompt fed to the decoder in chunks, with the cancel flag checked between them,
so that even a long prompt can be cancelled within one chunk. Every run (sampling and beam search)
and the what-if compute their prompts this way, so their logits agree."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from inference.decoding.surprisal import SurprisalCollector
from inference.engine import DecodeState
from inference.errors import Cancelled

PREFILL_CHUNK = 512  # prompt tokens per decoder call (the same logits as one call, bit for bit, on this model)


def prefill(
    state: DecodeState,
    ids: list[int],
    is_cancelled: Callable[[], bool] = lambda: False,
    chunk: int = PREFILL_CHUNK,
    surprisal: SurprisalCollector | None = None,
) -> np.ndarray:
    """Feeds the prompt ``ids`` to ``state`` in chunks, checking ``is_cancelled`` between them;
    returns the next logits [B, V]. Raises ``Cancelled`` when asked to stop. A state without a
    KV cache recomputes everything at each call, so it takes the prompt in one call. With
    ``surprisal``, every position's logits are kept and handed to it (row 0's)."""
    if not state.use_cache:
        chunk = max(len(ids), 1)
    logits: np.ndarray | None = None
    for begin in range(0, len(ids), chunk):
        if is_cancelled():
            raise Cancelled("cancelled during the prefill")
        if surprisal is None:
            logits = state.append_tokens(ids[begin : begin + chunk])
        else:
            every = state.append_tokens(ids[begin : begin + chunk], all_logits=True)  # [B, S, V]
            surprisal.observe(begin, every[0])
            logits = every[:, -1, :]
    if logits is None:
        raise ValueError("prefill needs at least one token")
    return logits
