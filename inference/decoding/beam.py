"""Beam search: keep the ``num_beams`` most likely continuations instead of sampling one.

Deterministic: scores are the model's own log-probabilities (log-softmax of the logits; the
sampler chain's stages do not apply), ties go to the lower beam then the lower token id.

Each step, every live beam proposes its ``2 × num_beams`` most likely next tokens. All proposals
are ranked by cumulative log-probability. Walking down that ranking, an end-of-sequence token
among the first ``num_beams`` proposals finishes a hypothesis; other proposals fill the next
step's beams until there are ``num_beams``; the rest are pruned. A finished hypothesis scores
``cum_logprob / length ** length_penalty`` (length counts the generated tokens, end-of-sequence
included). The search ends when ``num_beams`` hypotheses are finished and no live beam can
still beat the worst of them at its current length, or at ``max_tokens``, when live beams are
finished as they stand. Every step reports what was kept, pruned and finished, so a page can
draw the whole tree.

The search only reads logits and says what to feed next (``advance`` / ``feed``): whoever drives it
(``inference.decoding.generation``'s solo loop, or ``inference.batching.scheduler``'s shared batch) runs the decoder,
rearranging the beams' cache rows as ``feed`` says before feeding its tokens.
"""

from __future__ import annotations

import time
from collections.abc import Collection

import numpy as np

from inference.decoding.program import Feed, StepClock, collector, encode_prompt, started
from inference.decoding.request import GenerationRequest, check_token_ids
from inference.decoding.results import BeamReason, BeamStep, Finished, Hypothesis, Proposal, SampleResult, Started
from inference.decoding.surprisal import SurprisalCollector
from inference.runtime import Runtime

__all__ = ["BeamReason", "BeamRun", "BeamSearch", "BeamStep", "Hypothesis", "Proposal", "log_softmax"]


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """[B, V] float32 → [B, V] float64 log-probabilities."""
    x = logits.astype(np.float64)
    x -= x.max(axis=1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=1, keepdims=True))


class BeamSearch:
    def __init__(self, num_beams: int, length_penalty: float, max_tokens: int, eos_ids: Collection[int] = frozenset()) -> None:
        if num_beams < 2:
            raise ValueError(f"num_beams must be at least 2 for beam search, got {num_beams}")
        self.num_beams = num_beams
        self.length_penalty = length_penalty
        self.max_tokens = max_tokens
        self.eos_ids = frozenset(eos_ids)  # empty with ignore_eos
        self._beams: list[tuple[tuple[int, ...], float]] = [((), 0.0)]  # (tokens, cum_logprob)
        self._feed: tuple[list[int], np.ndarray] | None = None  # (parents, tokens [num_beams]) for the next logits
        self.finished: list[Hypothesis] = []
        self._done = False
        self._steps = 0

    def is_done(self) -> bool:
        return self._done

    def feed(self) -> tuple[list[int], np.ndarray]:
        """What the decoder gets next: row i continues the cache of row ``parents[i]`` (as the
        last logits were numbered) and is fed ``tokens[i]``."""
        if self._feed is None:
            raise RuntimeError("feed() before a step or after the search ended")
        return self._feed

    def advance(self, logits: np.ndarray, began: float | None = None) -> BeamStep:
        """One step from the live beams' logits [B, V] (B = 1 after the prompt)."""
        began = time.perf_counter() if began is None else began
        logprobs = log_softmax(logits)  # [B, V]
        width = 2 * self.num_beams
        proposals: list[Proposal] = []
        for row, (_, cum) in enumerate(self._beams):
            top = np.argpartition(-logprobs[row], width)[:width]
            for token in top:
                lp = float(logprobs[row, token])
                proposals.append(Proposal(row, int(token), lp, cum + lp))
        proposals.sort(key=lambda p: (-p.cum_logprob, p.parent, p.token_id))
        proposals = proposals[:width]
        kept: list[Proposal] = []
        pruned: list[Proposal] = []
        finished: list[Proposal] = []
        for rank, proposal in enumerate(proposals):
            if proposal.token_id in self.eos_ids:
                if rank < self.num_beams:
                    finished.append(proposal)
                    self._add(self._beams[proposal.parent][0] + (proposal.token_id,), proposal.cum_logprob, "eos")
                else:
                    pruned.append(proposal)
            elif len(kept) < self.num_beams:
                kept.append(proposal)
            else:
                pruned.append(proposal)
        self._steps += 1
        self._beams = [(self._beams[p.parent][0] + (p.token_id,), p.cum_logprob) for p in kept]
        self._feed = None
        if self._steps >= self.max_tokens or not kept:
            for tokens, cum in self._beams:
                self._add(tokens, cum, "max_tokens")
            self._done = True
        elif self._cannot_improve():
            self._done = True
        else:
            self._feed = ([p.parent for p in kept], np.array([p.token_id for p in kept], dtype=np.int64))
        return BeamStep(self._steps - 1, tuple(kept), tuple(pruned), tuple(finished), (time.perf_counter() - began) * 1000.0)

    def cancel(self) -> None:
        if not self._done:
            for tokens, cum in self._beams:
                self._add(tokens, cum, "cancelled")
            self._done = True
            self._feed = None

    def hypotheses(self) -> list[Hypothesis]:
        """The best ``num_beams`` hypotheses, best score first."""
        return sorted(self.finished, key=lambda h: (-h.score, h.token_ids))[: self.num_beams]

    def _score(self, cum_logprob: float, length: int) -> float:
        return cum_logprob / (max(length, 1) ** self.length_penalty)

    def _add(self, tokens: tuple[int, ...], cum_logprob: float, reason: BeamReason) -> None:
        self.finished.append(Hypothesis(tokens, cum_logprob, self._score(cum_logprob, len(tokens)), reason))
        self.finished = self.hypotheses()

    def _cannot_improve(self) -> bool:
        if len(self.finished) < self.num_beams:
            return False
        worst = min(h.score for h in self.finished)
        best_live = max(cum for _, cum in self._beams)
        return worst >= self._score(best_live, self._steps)


class BeamRun:
    """Beam search as a program: the prompt and any forced prefix are prefilled, the search starts after them."""

    rows_after_prefill = 1

    def __init__(self, runtime: Runtime, request: GenerationRequest) -> None:
        self.runtime = runtime
        self.request = request.with_seed()
        loop = self.request.loop
        check_token_ids(self.request, runtime.shape.vocab_size)
        self.rows = loop.num_beams
        eos_ids = frozenset() if loop.ignore_eos else runtime.codec.eos_ids
        self.search = BeamSearch(loop.num_beams, loop.length_penalty, loop.max_tokens, eos_ids)
        self.prompt_ids: list[int] = []
        self.surprisal: SurprisalCollector | None = None
        self._clock = StepClock()

    def prepare(self) -> list[int]:
        self._clock = StepClock()
        self.prompt_ids = encode_prompt(self.runtime, self.request)
        self.surprisal = collector(self.request, self.prompt_ids)
        return self.prompt_ids + list(self.request.prefix_tokens)

    def started(self) -> Started:
        return started(self.request, self.prompt_ids, self.surprisal)

    def advance(self, logits: np.ndarray, began: float) -> list[BeamStep]:
        step = self.search.advance(logits, began)
        self._clock.tick(1)  # a beam step counts as one token
        return [step]

    def feed(self) -> Feed:
        parents, tokens = self.search.feed()
        return Feed(tokens, parents)

    def is_done(self) -> bool:
        return self.search.is_done()

    def cancel(self) -> None:
        self.search.cancel()

    def finish(self) -> Finished:
        codec, loop = self.runtime.codec, self.request.loop
        hypotheses = tuple(self.search.hypotheses())
        samples = tuple(
            SampleResult(
                sample=i,
                reason=h.reason,
                stop_string=None,
                text=codec.decode([t for t in h.token_ids if t not in codec.eos_ids or loop.ignore_eos]),
                tail="",
                completion_tokens=len(h.token_ids),
                token_ids=h.token_ids,
            )
            for i, h in enumerate(hypotheses)
        )
        return Finished(samples=samples, prompt_tokens=len(self.prompt_ids), beams=hypotheses, **self._clock.timing())
