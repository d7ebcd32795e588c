"""A draft model: another decoder (smaller or quantized harder) proposes the tokens, each drawn
from its own sampler chain, and says the distribution q it drew from.

The source keeps a decoder state of its own and follows the context it is asked about: it keeps
the longest prefix it already holds, forgets the rest (the drafts the target rejected) and feeds
what is new, so no one has to tell it what was accepted.

A greedy chain draws from a point mass on its pick, so its draft says so (``Draft.q`` None, as
prompt lookup's) instead of writing out a [k, V] table of ones and zeros.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from inference.engine import Decoder
from inference.prefill import prefill
from inference.sampling import SamplerChain, SamplingParams
from inference.sampling.candidates import Candidates
from inference.sampling.chain import pick
from inference.speculative.drafts import Draft

DRAFT_STREAM = 0x4452414654  # the draft's random stream: default_rng([seed, DRAFT_STREAM]) ("DRAFT")


class ModelDraft:
    """Drafts from ``decoder`` with the chain of ``params`` (the chain's history is the whole context)."""

    name = "model"

    def __init__(self, decoder: Decoder, params: SamplingParams, seed: int) -> None:
        self.state = decoder.new_state()
        self.chain = SamplerChain(params)
        self.rng = np.random.default_rng([seed, DRAFT_STREAM])

    def propose(self, context: Sequence[int], k: int) -> Draft:
        held = self.state.ids[0]
        same = int(np.argmin(np.append(held[: len(context)] == np.asarray(context[: len(held)]), False)))
        self.state.truncate(min(same, len(context) - 1))  # at least one token to feed: the last logits
        logits = prefill(self.state, list(context[self.state.length :]))[0]  # [V]
        history = list(context)
        tokens: list[int] = []
        rows: list[np.ndarray] = []  # [V] each; none when greedy
        for i in range(k):
            token, q = self._draw(logits, history)
            tokens.append(token)
            if q is not None:
                rows.append(q)
            history.append(token)
            if i + 1 < k:
                logits = self.state.append_tokens([token])[0]
        return Draft(tuple(tokens), np.stack(rows) if rows else None)

    def _draw(self, logits: np.ndarray, history: list[int]) -> tuple[int, np.ndarray | None]:
        """One token from the draft chain and the distribution q [V] it was drawn from (None when
        greedy: a point mass on the token)."""
        drawn: list[np.ndarray] = []

        def choose(final: Candidates) -> tuple[int, float | None]:
            if self.chain.greedy:
                return int(final.ids[0]), None
            drawn.append(final.to_full(final.softmax.p, 0.0))
            u = float(self.rng.random())
            return pick(final, u), u

        token = int(self.chain.step_with(logits, history, choose, top_n=0).token)  # type: ignore[arg-type]
        return token, drawn[0] if drawn else None
