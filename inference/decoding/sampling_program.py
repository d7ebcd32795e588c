"""Sampling as a program: ``n`` samples of one prompt, each with its own sampler chain, seed and
stopping rules (``Generation``), and one sample's own state (``_Sample``). A speculative run (one
sample) also drafts tokens and judges them by the exact acceptance rule (``verify``; docs/speculative.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from inference.decoding.origin import Origin, picked_origin
from inference.decoding.program import (
    Feed,
    StepClock,
    collector,
    encode_prompt,
    hold_off_end,
    penalized_history,
    started,
)
from inference.decoding.request import GenerationRequest, check_token_ids
from inference.decoding.results import Finished, SampleResult, SpeculativeTotals, Started, StopReason, TokenStep, Verification
from inference.decoding.stopping import StopStringMatcher
from inference.decoding.surprisal import SurprisalCollector
from inference.errors import ParamError
from inference.runtime import Runtime
from inference.sampling import SamplerChain, StepTrace
from inference.sampling.candidates import Candidates
from inference.sampling.stages.grammar import Grammar
from inference.speculative import Check, Draft, DraftSource, DraftSources, judge
from inference.speculative.switch_off import cannot_pay, draft_cost, low_acceptance, pass_cost
from inference.text import Utf8Stream


class _Sample:
    """One sample's own state: its chain, its random stream, its text so far and why it ended.

    ``chain`` is built from the request's settings for sample ``index`` (``sample_sampling``: its
    own seed), which also seeds its random stream."""

    def __init__(self, runtime: Runtime, request: GenerationRequest, index: int, chain: SamplerChain) -> None:
        self.index = index
        self.codec = runtime.codec
        self.loop = request.loop
        self.prefix = request.prefix_tokens
        self.plan = request.prefix_plan
        self.watch = request.watch
        self.chain = chain
        self.rng = np.random.default_rng(chain.params.seed)
        self.utf8 = Utf8Stream()
        self.stops = StopStringMatcher(request.loop.stop)
        self.generated: list[int] = []
        self.texts: list[str] = []
        self.reason: StopReason | None = None
        self.stop_string: str | None = None
        self.tail = ""
        self.last_check: Check | None = None  # the acceptance rule's last verdict (speculative runs)

    def pick(
        self, logits: np.ndarray, prompt_ids: list[int], top_n: int, draft: tuple[int, np.ndarray] | None = None
    ) -> tuple[int, str, StepTrace]:
        """Chooses this sample's next token from its logits [V] and returns what it releases.

        While the prefix lasts the token is the prefix's, traced at its real position; after it,
        ``max_tokens`` and ``min_tokens`` count the new tokens only. With a ``draft`` (a token and
        the q [V] it was drawn from) the token is the acceptance rule's, judged on the chain's final
        distribution: the draft or its correction (``last_check`` says which)."""
        position = len(self.generated) - len(self.prefix)  # < 0 inside the prefix
        forced = self.prefix[len(self.generated)] if position < 0 else None
        if forced is None:
            logits = hold_off_end(logits, self.loop, position, self.codec.eos_ids)
        history = penalized_history(self.loop, prompt_ids, self.generated)
        if draft is None or forced is not None:
            trace = self.chain.step(logits, history, self.rng, top_n=top_n, force=forced, watch=self.watch)
        else:
            trace = self.chain.step_with(logits, history, self._judge(*draft), top_n=top_n, watch=self.watch)
        token = int(trace.token)  # type: ignore[arg-type]
        self.generated.append(token)
        text = self._release(token, position)
        if self.reason is None and position + 1 >= self.loop.max_tokens:
            self.reason = "max_tokens"
            text += self._flush()
        self.texts.append(text)
        return token, text, trace

    def origin(self, index: int, trace: StepTrace, drafted: bool | None = None) -> Origin:
        """The origin of this sample's token ``index``, traced as ``trace`` (``drafted``: its draft's
        verdict in a speculative step, ``picked_origin``)."""
        return self.plan.origin(index, trace) if index < len(self.prefix) else picked_origin(trace, drafted)

    def _judge(self, draft: int, q: np.ndarray) -> Callable[[Candidates], tuple[int, float | None]]:
        def choose(final: Candidates) -> tuple[int, float | None]:
            self.last_check = judge(final, draft, q, self.rng, self.chain.greedy)
            return self.last_check.token, self.last_check.draw

        return choose

    def new_tokens_left(self) -> int:
        """Tokens this sample may still make before ``max_tokens`` (the prefix counts apart)."""
        return self.loop.max_tokens - (len(self.generated) - len(self.prefix))

    def cancel(self) -> None:
        if self.reason is None:
            self.reason = "cancelled"
            self.tail = self._flush()

    def result(self) -> SampleResult:
        return SampleResult(
            sample=self.index,
            reason=self.reason or "cancelled",
            stop_string=self.stop_string,
            text="".join(self.texts) + self.tail,
            tail=self.tail,
            completion_tokens=len(self.generated),
            token_ids=tuple(self.generated),
        )

    def _release(self, token: int, position: int) -> str:
        """The text this token lets out, ending the sample on end-of-sequence or a stop string."""
        if token in self.codec.eos_ids and not self.loop.ignore_eos:
            self.reason = "eos"
            return self._flush()
        text = self.utf8.push(self.codec.token_bytes(token))
        if position >= 0 and position + 1 < self.loop.min_tokens:
            return text  # stop strings count only from min_tokens new tokens on (a forced prefix counts, as in its run)
        released, stop = self.stops.push(text)
        if stop is not None:
            self.reason = "stop"
            self.stop_string = stop
        return released

    def _flush(self) -> str:
        released, stop = self.stops.push(self.utf8.finish())
        if stop is not None:
            self.stop_string = stop
            self.reason = "stop"
            return released
        return released + self.stops.finish()


class Generation:
    """Sampling: ``n`` samples of one prompt, each with its own chain, seed and stopping rules."""

    def __init__(
        self,
        runtime: Runtime,
        request: GenerationRequest,
        drafter: DraftSource | None = None,
        drafts: DraftSources | None = None,
    ) -> None:
        """A speculative run's draft source is ``drafter`` when given (a source its parameter does
        not name), else the one ``drafts`` (default: prompt lookup only) makes for the name."""
        self.runtime = runtime
        self.request = request.with_seed()
        self.seed: int = int(self.request.sampling.seed)  # type: ignore[arg-type]
        check_token_ids(self.request, runtime.shape.vocab_size)  # before any chain sees an id
        n = self.request.loop.n
        self.rows = self.rows_after_prefill = n
        texts = runtime.codec.token_texts()
        self.samples = [
            _Sample(runtime, self.request, i, SamplerChain(self.request.sample_sampling(i), token_texts=texts)) for i in range(n)
        ]
        check_prefix_grammar(self.samples[0].chain, self.request.prefix_tokens, runtime.codec.token_text)
        self._filler = min(runtime.codec.eos_ids)  # fed to samples that have ended
        speculative = self.request.speculative  # one sample (``request.check_rules``)
        if speculative is not None and drafter is None:
            drafter = (drafts or DraftSources()).new(speculative, self.request.sampling, self.seed)
        self.drafter: DraftSource | None = None if speculative is None else drafter
        self.drafted = self.checked = self.accepted = self.verifications = 0  # speculative totals (``SpeculativeTotals``)
        # where the switch-off rule stopped the drafting, and why: from token 0 when it cannot pay at all
        self.switched_off = (
            None if speculative is None or not speculative.switch_off else cannot_pay(speculative.draft, speculative.k)
        )
        self.switched_off_at: int | None = None if self.switched_off is None else 0
        self._made, self._cost = 0, 0.0  # tokens the verification passes made, their cost in one-token steps
        self.prompt_ids: list[int] = []
        self.surprisal: SurprisalCollector | None = None
        self._prepared = False
        self._pending: list[int] | None = None  # chosen but not yet fed to the decoder
        self._clock = StepClock()

    # -- the program: logits in, tokens out

    def prepare(self) -> list[int]:
        """Encodes the prompt and checks it fits; returns the ids to prefill."""
        self._clock = StepClock()
        self.prompt_ids = encode_prompt(self.runtime, self.request)
        self.surprisal = collector(self.request, self.prompt_ids)
        self._prepared = True
        return self.prompt_ids

    def started(self) -> Started:
        return started(self.request, self.prompt_ids, self.surprisal)

    def advance(self, logits: np.ndarray, began: float) -> list[TokenStep]:
        """One token for every sample still running, from the logits [n, V] of the samples' rows."""
        if self.is_done() or not self._prepared:
            raise RuntimeError("a step after the run ended or before it started")
        picked: list[tuple[_Sample, int, str, StepTrace]] = []
        for sample, row in zip(self.samples, logits):
            if sample.reason is None:
                picked.append((sample, *sample.pick(row, self.prompt_ids, self.request.top_n)))
        self._pending = None if self.is_done() else [s.generated[-1] if s.reason is None else self._filler for s in self.samples]
        elapsed = (self._clock.tick(len(picked)) - began) * 1000.0
        return [
            TokenStep(
                sample.index,
                len(sample.generated) - 1,
                token,
                text,
                trace,
                elapsed,
                forced=len(sample.generated) <= len(sample.prefix),
                origin=sample.origin(len(sample.generated) - 1, trace),
            )
            for sample, token, text, trace in picked
        ]

    @property
    def speculating(self) -> bool:
        """A speculative run that still drafts (the switch-off rule has not stopped it)."""
        return self.drafter is not None and self.switched_off_at is None

    def draft(self) -> Draft:
        """Speculative runs: up to k tokens drafted to follow the pending one (none while a forced
        prefix lasts, none once speculation is switched off, and never more than the sample may
        still make after it)."""
        sample = self.samples[0]
        if self.drafter is None or self.request.speculative is None or self._pending is None:
            raise RuntimeError("draft() needs a speculative run with a token pending")
        room = min(self.request.speculative.k, sample.new_tokens_left())
        if len(sample.generated) < len(sample.prefix) or room < 1 or not self.speculating:
            return Draft(())
        draft = self.drafter.propose(self.prompt_ids + sample.generated, room)
        return Draft(draft.tokens[:room], None if draft.q is None else draft.q[:room])

    def verify(self, logits: np.ndarray, draft: Draft, began: float) -> tuple[Verification, list[TokenStep]]:
        """One speculative step from the logits [m + 1, V] after the pending token and each of the
        m drafted tokens (one decoder pass): the acceptance rule judges the drafts in order, each on
        the chain's distribution after the tokens before it, and the step ends at the first
        rejection (its corrected token), at the end of the sample, or with the bonus token that
        the last position's logits give once every draft is accepted."""
        if self.is_done() or self._pending is None or len(logits) != len(draft.tokens) + 1:
            raise RuntimeError("verify() needs a token pending and the logits after it and each draft")
        sample, vocab_size = self.samples[0], logits.shape[-1]
        first = len(sample.generated)
        picked: list[tuple[int, str, StepTrace, bool | None]] = []  # … and the draft's verdict (None: the bonus)
        checks: list[Check] = []
        for position, token in enumerate(draft.tokens):
            chosen = sample.pick(logits[position], self.prompt_ids, self.request.top_n, (token, draft.q_of(position, vocab_size)))
            check = sample.last_check
            assert check is not None
            checks.append(check)
            picked.append((*chosen, check.accepted))
            if not check.accepted or sample.reason is not None:
                break
        bonus = None
        if sample.reason is None and all(check.accepted for check in checks):
            bonus, text, trace = sample.pick(logits[len(draft.tokens)], self.prompt_ids, self.request.top_n)
            picked.append((bonus, text, trace, None))
        self.drafted += len(draft.tokens)
        self.checked += len(checks)
        self.accepted += sum(check.accepted for check in checks)
        self.verifications += 1
        self._made += len(picked)
        self._cost += pass_cost(len(draft.tokens) + 1) + draft_cost(self.request.speculative.draft, len(draft.tokens))
        if sample.reason is None and self.switched_off_at is None and self.request.speculative.switch_off:
            self.switched_off = low_acceptance(self.checked, self._made, self._cost)
            if self.switched_off is not None:
                self.switched_off_at = len(sample.generated)  # the tokens from the next one on are plain
        self._pending = None if self.is_done() else [sample.generated[-1]]
        elapsed = (self._clock.tick(len(picked)) - began) * 1000.0
        corrected = None if not checks or checks[-1].accepted else checks[-1].token
        verification = Verification(sample.index, first, draft.tokens, tuple(checks), corrected, bonus)
        steps = [
            TokenStep(
                sample.index,
                first + i,
                token,
                text,
                trace,
                elapsed,
                drafted=bool(verdict),
                origin=sample.origin(first + i, trace, verdict),
            )
            for i, (token, text, trace, verdict) in enumerate(picked)
        ]
        return verification, steps

    def feed(self) -> Feed:
        """The tokens just chosen (an end-of-sequence filler for samples that have ended, so the
        rows stay in step)."""
        if self._pending is None:
            raise RuntimeError("feed() before a step or after the run ended")
        return Feed(np.array(self._pending, dtype=np.int64))

    def is_done(self) -> bool:
        return all(sample.reason is not None for sample in self.samples)

    def cancel(self) -> None:
        for sample in self.samples:
            sample.cancel()
        self._pending = None

    def finish(self) -> Finished:
        """The summary once the run has ended; a cancelled run releases what it held back."""
        if not self.is_done():
            raise RuntimeError("finish() before the run ended")
        totals = (
            None
            if self.drafter is None
            else SpeculativeTotals(
                self.drafted, self.checked, self.accepted, self.verifications, self.switched_off_at, self.switched_off
            )
        )
        return Finished(
            samples=tuple(sample.result() for sample in self.samples),
            prompt_tokens=len(self.prompt_ids),
            speculative=totals,
            **self._clock.timing(),
        )


def check_prefix_grammar(chain: SamplerChain, prefix: tuple[int, ...], token_text: Callable[[int], str]) -> None:
    """A forced prefix must be text the run's grammar allows: the first token it refuses is named
    before the run starts (a branch on an alternative the grammar removed, an edit it forbids)."""
    grammar = next((stage for stage in chain.stages if isinstance(stage, Grammar)), None)
    refused = None if grammar is None or not prefix else grammar.refused_at(prefix)
    if refused is not None:
        raise ParamError(
            f"prefix_tokens.{refused}",
            f"the grammar does not allow {token_text(prefix[refused])!r} at that point of the text, so it cannot be forced there",
        )
