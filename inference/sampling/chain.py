"""``SamplerChain``: the enabled stages as a list, then the final inverse-CDF pick."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from inference.sampling.candidates import LOGIT_LIMIT, Candidates, crossing, frozen, top_positions
from inference.sampling.order import stable_argsort
from inference.sampling.params import SamplingParams
from inference.sampling.stages import STAGE_BY_NAME, Stage, StepContext
from inference.sampling.trace import StageCount, StepTrace, TokenLookup


class SamplerChain:
    """The stages for ``params`` (disabled ones are not added) and the final pick.

    ``token_texts``: the decoded text of every token id, indexed by id; only DRY reads it, to find
    the tokens whose text contains a sequence breaker. Without it DRY has no breakers.
    ``distribution`` and ``trace`` are pure; ``step`` also advances the stateful stages.
    """

    def __init__(self, params: SamplingParams, token_texts: Sequence[str] | None = None) -> None:
        self.params = params
        # one stage per enabled name, in ``sampler_order``, each built by its declaration
        self.stages: list[Stage] = [STAGE_BY_NAME[name].build(params, token_texts) for name in params.enabled_stages()]
        self.greedy = params.greedy
        self._ids: np.ndarray | None = None  # arange(V), shared by every full candidate set

    @property
    def stage_names(self) -> tuple[str, ...]:
        return tuple(stage.name for stage in self.stages)

    def reset(self) -> None:
        """Back to a fresh run: mirostat's mu and XTC's stream start over."""
        for stage in self.stages:
            stage.reset()

    def follow(self, tokens: Sequence[int]) -> None:
        """Start from after ``tokens`` (already generated): the grammar advances over them."""
        for stage in self.stages:
            stage.follow(tokens)

    # -- public calls --------------------------------------------------------------------------

    def distribution(self, logits: np.ndarray, history: Sequence[int] = ()) -> np.ndarray:
        """The float64 [V] distribution the next token is drawn from (removed tokens exactly 0)."""
        raw, outputs = self._run(logits, history)
        final = outputs[-1][1] if outputs else raw
        return final.to_full(final.softmax.p, 0.0)

    def trace(self, logits: np.ndarray, history: Sequence[int] = (), top_n: int = 5, watch: Sequence[int] = ()) -> StepTrace:
        """What each stage would do for these logits, without picking or changing any state."""
        raw, outputs = self._run(logits, history)
        return self._trace(raw, outputs, top_n, token=None, draw=None, watch=watch)

    def step(
        self,
        logits: np.ndarray,
        history: Sequence[int],
        rng: np.random.Generator,
        top_n: int = 5,
        force: int | None = None,
        watch: Sequence[int] = (),
    ) -> StepTrace:
        """Run the stages, draw one u = rng.random() (none when greedy), pick, let stateful stages
        accept the token, and return the trace of the step.

        ``force`` takes that token instead of the pick (a branch replaying a chosen prefix); the
        draw is still taken, so the run's later draws line up with a run that picked it.
        ``watch``: token ids to follow wherever they rank (``StepTrace.watched``)."""
        raw, outputs = self._run(logits, history)
        final = outputs[-1][1] if outputs else raw
        draw = None if self.greedy else float(rng.random())
        own = int(final.ids[0]) if draw is None else pick(final, draw)  # what the chain itself takes
        token = own if force is None else int(force)
        for stage, (_, out) in zip(self.stages, outputs):
            stage.accept(token, out)
        return self._trace(raw, outputs, top_n, token=token, draw=draw, watch=watch, own_pick=own)

    def step_with(
        self,
        logits: np.ndarray,
        history: Sequence[int],
        choose: Callable[[Candidates], tuple[int, float | None]],
        top_n: int = 5,
        watch: Sequence[int] = (),
    ) -> StepTrace:
        """``step`` with another way to choose: ``choose`` gets the final candidates and returns the
        token and the draw it used (speculative decoding's acceptance rule); stateful stages then
        accept the token as in ``step``."""
        raw, outputs = self._run(logits, history)
        token, draw = choose(outputs[-1][1] if outputs else raw)
        for stage, (_, out) in zip(self.stages, outputs):
            stage.accept(token, out)
        return self._trace(raw, outputs, top_n, token=token, draw=draw, watch=watch, own_pick=token)

    def sample(self, logits: np.ndarray, history: Sequence[int], rng: np.random.Generator) -> int:
        return self.step(logits, history, rng, top_n=0).token  # type: ignore[return-value]

    # -- internals -----------------------------------------------------------------------------

    def _run(self, logits, history) -> tuple[Candidates, list[tuple[str, Candidates]]]:
        raw = self._raw_candidates(logits)
        ctx = StepContext(history, raw.vocab_size)
        outputs: list[tuple[str, Candidates]] = []
        cand = raw
        with np.errstate(over="ignore"):  # overflow to +-inf is clipped by Candidates.with_logits and .shifted
            for stage in self.stages:
                cand = stage.apply(cand, ctx)
                outputs.append((stage.name, cand))
        return raw, outputs

    def _raw_candidates(self, logits) -> Candidates:
        x = np.asarray(logits)
        if x.ndim != 1 or x.size == 0 or x.dtype.kind not in "fiu":
            raise ValueError(f"logits must be a non-empty 1-D array of numbers; got shape {x.shape}, {x.dtype}")
        top = float(x.max())
        if np.isnan(top) or top == np.inf:
            raise ValueError("logits must not contain NaN or +inf")
        if top == -np.inf:
            raise ValueError("logits are all -inf: no token can be drawn")
        vocab = x.size
        if self._ids is None or len(self._ids) != vocab:
            self._ids = frozen(np.arange(vocab, dtype=np.int64))
        low = float(x.min())
        if low >= -LOGIT_LIMIT and top <= LOGIT_LIMIT:
            # the common case: the set reads the model's logits, converting them only where needed
            return Candidates.of_model(self._ids, x, extremes=(top, low))  # unclipped: the softmax needs no pass for them
        values = x.astype(np.float64)  # always a copy: the caller's array is never touched
        if top > LOGIT_LIMIT or (low < -LOGIT_LIMIT and low != -np.inf):
            np.clip(values, -LOGIT_LIMIT, LOGIT_LIMIT, out=values)  # keep differences finite
            values[np.isneginf(x)] = -np.inf
        if low == -np.inf:  # tokens the model itself rules out are never candidates
            keep = np.isfinite(values)
            return Candidates(frozen(self._ids[keep]), values[keep], vocab)
        return Candidates(self._ids, values, vocab)

    def _trace(self, raw, outputs, top_n, token, draw, watch=(), own_pick=None) -> StepTrace:
        if not isinstance(top_n, int) or isinstance(top_n, bool) or top_n < 0:
            raise ValueError(f"top_n must be an integer >= 0; got {top_n!r}")
        lookup = TokenLookup(raw, outputs)
        final = lookup.final
        top = raw.ids[top_positions(raw.ordered_values, top_n)] if top_n > 0 else raw.ids[:0]
        # the chosen token and the alternatives described in one vectorized lookup (``describe``'s numbers)
        described = lookup.describe_many(top if token is None else np.concatenate(([token], top)))
        chosen = None if token is None else described[0]
        return StepTrace(
            token=token,
            draw=draw,
            raw_prob=None if chosen is None else chosen.raw_prob,
            prob=None if chosen is None else chosen.prob,
            alternatives=described if token is None else described[1:],
            chosen=chosen,
            draw_interval=None if token is None else lookup.draw_interval(token),
            stages=tuple(StageCount(name, len(out)) for name, out in outputs),
            entropy_before=raw.softmax.entropy,
            entropy_after=final.softmax.entropy,
            greedy=self.greedy,
            lookup=lookup,
            watched=lookup.watch(watch) if len(watch) else (),
            own_pick=own_pick,
        )


def pick(final: Candidates, u: float) -> int:
    """Inverse CDF: tokens sorted by probability descending (ties: lower id first); the first
    whose cumulative probability exceeds u. If rounding keeps the total at or below u, the last
    token with nonzero probability. The running sum ahead of the picked token is kept on the
    softmax (``Softmax.picked``), so the draw bar's segment is the sum the draw was compared with."""
    soft = final.softmax  # cumulative sums of e = p * z, compared with u * z: no [V] division
    found = crossing(soft.e, u * soft.z, strict=True, soft=soft)
    if found is None:
        order = stable_argsort(-soft.e)
        return int(final.ids[order[soft.e[order] > 0][-1]])
    position, ahead = found
    soft.picked(position, ahead)
    return int(final.ids[position])
