"""One run: prompt in, a stream of traced tokens out, until a stopping rule ends it.

The loop is the seed texts' "run model, sample one token, append to sequence", one token per
sample per ``step``:

1. feed the tokens chosen last time to the decoder (the prompt once, at the start) → logits [n, V];
2. hand each sample's logits and history to its own sampler chain, which picks a token with the
   sample's own ``numpy.random.Generator`` and says what each stage did;
3. turn the token's bytes into text that never splits a character and never shows a stop string;
4. end a sample on the model's end-of-sequence token, a stop string, ``max_tokens``, or a cancel.

``n`` samples of one prompt run as one batch through the decoder; sample i is seeded with
``sample_seed(seed, i)`` = (seed + i) mod 2^63, so every seed a client may send works for every ``n``. A sample that has ended is fed an end-of-sequence token to keep the batch rectangular
and its logits are ignored.

A run's own logic lives in a *program* (``Generation`` for sampling, ``BeamRun`` for beam search)
that never calls the decoder: ``prepare`` gives the ids to prefill, ``advance`` takes the logits of
its rows and returns the step's ``TokenStep``s (or one ``BeamStep``), ``feed`` says which tokens
its rows get next (and, for beams, which row's cache each continues). Two drivers feed programs
logits: ``SoloDriver`` on a decoder state of the run's own (``run`` below), and
``inference.batching.scheduler.Scheduler``, which decodes many programs' rows in one batch per step. Both
take the same tokens for the same logits.

A run with ``speculative`` set is driven by ``SpeculativeDriver``: each step feeds the pending
token and a few drafted ones in one pass, ``Generation.verify`` judges the drafts in order by the
exact acceptance rule on the chain's distributions, and the cache is cut back past the rejected
ones (docs/speculative.md). Its steps yield a ``Verification`` before their ``TokenStep``s.

Whoever drives a program checks its cancel flag between steps, so a cancel ends the run within one
token. The prompt is fed in chunks (``inference.prefill``) with the flag checked between them, so
even a long prefill stops within one chunk; a run cancelled before its prefill is over raises
``Cancelled`` and never announces itself (no ``Started``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, asdict, dataclass, field, replace
from typing import Any, Literal, Protocol

import numpy as np

from inference.chat_template import ChatPrompt
from inference.decoding.beam import BeamSearch, BeamStep, Hypothesis
from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.decoding.origin import Origin, PrefixPlan, picked_origin
from inference.decoding.stopping import StopStringMatcher
from inference.decoding.surprisal import PromptSurprisal, SurprisalCollector
from inference.engine import DecodeState
from inference.errors import Cancelled, ParamError
from inference.prefill import prefill
from inference.runtime import Runtime
from inference.sampling import SamplerChain, SamplingParams, StepTrace
from inference.sampling.candidates import Candidates
from inference.sampling.params import MAX_SEED
from inference.sampling.stages.grammar import Grammar
from inference.speculative import Check, Draft, DraftSource, DraftSources, judge
from inference.speculative.switch_off import SwitchedOff, cannot_pay, draft_cost, low_acceptance, pass_cost
from inference.text import Mode, Utf8Stream

StopReason = Literal["eos", "stop", "max_tokens", "cancelled"]
SEED_BITS = 62  # a drawn seed: seed + i stays below 2**63 for every sample, so no wrap is ever seen


def sample_seed(seed: int, index: int) -> int:
    """Sample ``index``'s seed: seed + index, wrapped modulo 2^63 so it stays a valid seed."""
    return (seed + index) % (MAX_SEED + 1)


@dataclass(frozen=True)
class GenerationRequest:
    prompt: str
    mode: Mode = "completion"
    system: str | None = None
    sampling: SamplingParams = field(default_factory=SamplingParams)
    loop: LoopParams = field(default_factory=LoopParams)
    top_n: int = 5
    use_cache: bool = True
    prefix_tokens: tuple[int, ...] = ()  # forced as the first generated tokens (a branch's path)
    chat: ChatPrompt | None = None  # chat mode's conversation; None: ``prompt`` (and ``system``) is one turn
    _: KW_ONLY  # the options added since: by name only
    speculative: SpeculativeParams | None = None  # drafts verified in one pass; same output distribution
    prompt_scores: bool = (
        False  # keep the prefill's logits and report each prompt token's surprisal (``inference.decoding.surprisal``)
    )
    watch: tuple[int, ...] = ()  # token ids each step's trace follows wherever they rank (``StepTrace.watched``)
    # which prefix tokens the person chose (``inference.decoding.origin``): the last ``typed_tokens``
    # typed (edit and continue); with ``branched`` the one before them picked as a branch
    typed_tokens: int = 0
    branched: bool = False

    def __post_init__(self) -> None:
        try:
            self.prefix_plan  # noqa: B018 (checks typed_tokens and branched against the prefix)
        except ValueError as error:
            raise ParamError("typed_tokens" if "typed" in str(error) else "branched", str(error)) from None
        if self.sampling.grammar is not None and self.loop.num_beams > 1:
            raise ParamError("num_beams", "num_beams must be 1 with a grammar: beam search does not run the sampler chain")
        if self.sampling.grammar is not None and self.loop.ignore_eos:
            raise ParamError("ignore_eos", "ignore_eos must be false with a grammar: the end of sequence is where it is complete")

    @property
    def prefix_plan(self) -> PrefixPlan:
        return PrefixPlan(len(self.prefix_tokens), self.typed_tokens, self.branched)

    def with_seed(self) -> GenerationRequest:
        """The same request with a seed: the client's, or one drawn now so the run can be replayed."""
        if self.sampling.seed is not None:
            return self
        return replace(self, sampling=replace(self.sampling, seed=secrets.randbits(SEED_BITS)))

    def params_dict(self) -> dict[str, Any]:
        """The flat ``params`` (``speculative`` only when set: the key is the generate frame's alone)."""
        speculative = {} if self.speculative is None else {"speculative": self.speculative.to_dict()}
        return {**self.sampling.to_dict(), **self.loop.to_dict(), **speculative}


@dataclass(frozen=True)
class Started:
    request: GenerationRequest  # as run: the seed filled in
    prompt_ids: list[int]
    prompt_surprisal: PromptSurprisal | None = None  # when the request asked for ``prompt_scores``

    @property
    def seed(self) -> int:
        return int(self.request.sampling.seed)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TokenStep:
    sample: int
    index: int
    token_id: int
    text: str  # the output text this token releases; may be empty
    trace: StepTrace
    elapsed_ms: float
    forced: bool = False  # taken from the request's prefix_tokens, not picked
    drafted: bool = False  # speculative decoding: a drafted token the model accepted
    origin: Origin = Origin.SAMPLED  # how it got there (``inference.decoding.origin``)


@dataclass(frozen=True)
class Verification:
    """One speculative step: the tokens drafted for positions ``index``, ``index`` + 1, … and
    verified in one pass. The checks run in order up to the first rejection (or the first token
    that ends the sample); ``corrected`` is the token drawn instead of the rejected draft,
    ``bonus`` the token the model's own distribution gave after every draft was accepted. The
    token steps follow it."""

    sample: int
    index: int  # the index of the first drafted position among the sample's tokens
    drafted: tuple[int, ...]
    checks: tuple[Check, ...]
    corrected: int | None
    bonus: int | None

    @property
    def accepted(self) -> int:
        return sum(check.accepted for check in self.checks)


@dataclass(frozen=True)
class SpeculativeTotals:
    """A speculative run's counts, one definition everywhere (``done.speculative``, the HTTP
    extension, saved runs, the page): ``drafted`` every token a draft proposed, ``checked`` those the
    model judged (a step stops judging at its first rejection or at the end of the sample, so the
    drafts after it are drafted but not checked), ``accepted`` the checked drafts it kept. The
    acceptance rate is ``accepted`` / ``checked``; each equals the sum over the run's
    ``Verification`` records (``len(drafted)``, ``len(checks)``, ``accepted``)."""

    drafted: int  # tokens the drafts proposed, checked or not
    checked: int  # drafted tokens the model judged
    accepted: int  # checked drafts the model kept
    verifications: int = 0  # decoder passes that verified drafts
    switched_off_at: int | None = None  # the token index from which the run went on plainly (0: it never drafted)
    reason: SwitchedOff | None = None  # why, in the switch-off rule's numbers (``inference.speculative.switch_off``)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SampleResult:
    sample: int
    reason: StopReason
    stop_string: str | None
    text: str
    tail: str  # text released only at the end: held back by an unfinished character or stop-string prefix
    completion_tokens: int
    token_ids: tuple[int, ...]


@dataclass(frozen=True)
class Finished:
    samples: tuple[SampleResult, ...]  # beam search: one per final hypothesis, best first
    prompt_tokens: int
    time_to_first_token_ms: float | None
    decode_tokens_per_s: float | None
    total_ms: float
    beams: tuple[Hypothesis, ...] = ()  # beam search only, in the order of ``samples``
    speculative: SpeculativeTotals | None = None  # a speculative run only

    @property
    def first(self) -> SampleResult:
        return self.samples[0]

    # The single-sample view most callers want.
    reason = property(lambda self: self.first.reason)
    stop_string = property(lambda self: self.first.stop_string)
    text = property(lambda self: self.first.text)
    tail = property(lambda self: self.first.tail)
    completion_tokens = property(lambda self: self.first.completion_tokens)


class _Sample:
    """One sample's own state: its chain, its random stream, its text so far and why it ended."""

    def __init__(self, runtime: Runtime, request: GenerationRequest, index: int) -> None:
        self.index = index
        self.codec = runtime.codec
        self.loop = request.loop
        self.prefix = request.prefix_tokens
        self.plan = request.prefix_plan
        self.watch = request.watch
        seed = sample_seed(int(request.sampling.seed), index)  # type: ignore[arg-type]
        self.chain = SamplerChain(replace(request.sampling, seed=seed), token_texts=runtime.codec.token_texts())
        self.rng = np.random.default_rng(seed)
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


class Program(Protocol):
    """One run's own logic, fed logits by a driver (``SoloDriver`` or ``inference.batching.scheduler``)."""

    request: GenerationRequest
    rows: int  # decoder rows it uses at most
    rows_after_prefill: int  # rows the prompt's cache is copied to once prefilled
    surprisal: SurprisalCollector | None  # set by ``prepare`` when the request asks for prompt scores: the driver feeds it

    def prepare(self) -> list[int]: ...  # the ids to prefill (checked against the context window)
    def started(self) -> Started: ...
    def advance(self, logits: np.ndarray, began: float) -> list[TokenStep] | list[BeamStep]: ...
    def feed(self) -> Feed: ...
    def is_done(self) -> bool: ...
    def cancel(self) -> None: ...
    def finish(self) -> Finished: ...


@dataclass(frozen=True)
class Feed:
    """What a program's rows get next: ``tokens`` [r], row i after the cache of row ``parents[i]``
    (None: each row after its own)."""

    tokens: np.ndarray  # [r] int64
    parents: list[int] | None = None


def encode_prompt(runtime: Runtime, request: GenerationRequest) -> list[int]:
    """The prompt's ids as the model reads them; ``ParamError`` when they and the forced prefix
    leave no room for ``max_tokens`` in the context window."""
    ids = runtime.codec.encode(request.prompt, request.mode, request.system, request.chat)
    request.loop.check_context(len(ids) + len(request.prefix_tokens), runtime.shape.context_window)
    return ids


def _collector(request: GenerationRequest, prompt_ids: list[int]) -> SurprisalCollector | None:
    return SurprisalCollector(prompt_ids, request.top_n) if request.prompt_scores else None


def _started(request: GenerationRequest, prompt_ids: list[int], surprisal: SurprisalCollector | None) -> Started:
    return Started(request, prompt_ids, None if surprisal is None else surprisal.result())


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
        self.samples = [_Sample(runtime, self.request, i) for i in range(n)]
        check_prefix_grammar(self.samples[0].chain, self.request.prefix_tokens, runtime.codec.token_text)
        self._filler = min(runtime.codec.eos_ids)  # fed to samples that have ended
        speculative = self.request.speculative
        if speculative is not None and (n > 1 or self.request.loop.num_beams > 1):
            raise ParamError("speculative", "speculative decoding runs one sample: set n and num_beams to 1")
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
        self.surprisal = _collector(self.request, self.prompt_ids)
        self._prepared = True
        return self.prompt_ids

    def started(self) -> Started:
        return _started(self.request, self.prompt_ids, self.surprisal)

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


class BeamRun:
    """Beam search as a program: the prompt and any forced prefix are prefilled, the search starts after them."""

    rows_after_prefill = 1

    def __init__(self, runtime: Runtime, request: GenerationRequest) -> None:
        self.runtime = runtime
        self.request = request.with_seed()
        loop = self.request.loop
        check_token_ids(self.request, runtime.shape.vocab_size)
        if self.request.speculative is not None:
            raise ParamError("speculative", "speculative decoding runs one sample: set n and num_beams to 1")
        self.rows = loop.num_beams
        eos_ids = frozenset() if loop.ignore_eos else runtime.codec.eos_ids
        self.search = BeamSearch(loop.num_beams, loop.length_penalty, loop.max_tokens, eos_ids)
        self.prompt_ids: list[int] = []
        self.surprisal: SurprisalCollector | None = None
        self._clock = StepClock()

    def prepare(self) -> list[int]:
        self._clock = StepClock()
        self.prompt_ids = encode_prompt(self.runtime, self.request)
        self.surprisal = _collector(self.request, self.prompt_ids)
        return self.prompt_ids + list(self.request.prefix_tokens)

    def started(self) -> Started:
        return _started(self.request, self.prompt_ids, self.surprisal)

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


def new_program(runtime: Runtime, request: GenerationRequest, drafts: DraftSources | None = None) -> Generation | BeamRun:
    """The program for a request: beam search when ``num_beams`` > 1, else sampling (a speculative
    run's draft source made by ``drafts``)."""
    return BeamRun(runtime, request) if request.loop.num_beams > 1 else Generation(runtime, request, drafts=drafts)


class SoloDriver:
    """Drives one program on a decoder state of its own (with or without a KV cache)."""

    def __init__(self, runtime: Runtime, program: Program) -> None:
        self.program = program
        self.state: DecodeState = runtime.decoder.new_state(batch_size=1, use_cache=program.request.use_cache)
        self._logits: np.ndarray | None = None  # [r, V] not yet handed to the program

    def start(self, is_cancelled: Callable[[], bool] = lambda: False) -> Started:
        """Prefills the program's prompt in chunks (``Cancelled`` between them); the cache is then
        copied to every row the program starts with."""
        ids = self.program.prepare()
        logits = prefill(self.state, ids, is_cancelled, surprisal=self.program.surprisal)  # [1, V]
        self._logits = self.spread(logits)
        return self.program.started()

    def spread(self, logits: np.ndarray) -> np.ndarray:
        """The prompt's cache and last ``logits`` [1, V] copied to every row the program starts
        with: [rows, V]."""
        rows = self.program.rows_after_prefill
        if rows == 1:
            return logits
        self.state.reorder([0] * rows)
        return np.repeat(logits, rows, axis=0)

    def next_logits(self) -> np.ndarray:
        """Feeds what the program chose last (each beam continuing its parent's row): [rows, V]."""
        feed = self.program.feed()
        if feed.parents is not None:
            self.state.reorder(feed.parents)
        return self.state.append_tokens(feed.tokens[:, None])

    def step(self) -> list[TokenStep] | list[BeamStep]:
        """Feeds what the program chose last (not on the first step) and hands it the logits."""
        began = time.perf_counter()
        logits, self._logits = self._logits, None
        if logits is None:
            logits = self.next_logits()
        return self.program.advance(logits, began)


class SpeculativeDriver(SoloDriver):
    """Drives a speculative ``Generation`` (one sample): each step feeds the pending token and the
    drafted ones in one pass, lets the program judge them, and rolls the cache back past the
    rejected drafts. A step with nothing drafted is a plain one."""

    program: Generation

    def step(self) -> list[Verification | TokenStep]:  # type: ignore[override]
        began = time.perf_counter()
        logits, self._logits = self._logits, None
        if logits is not None:  # the first token, from the prompt's logits
            return self.program.advance(logits, began)
        draft = self.program.draft()
        if not draft.tokens:
            return self.program.advance(self.next_logits(), began)
        pending = int(self.program.feed().tokens[0])
        kept = self.state.length + 1  # the cache after the pending token
        logits = self.state.append_tokens([pending, *draft.tokens], all_logits=True)[0]  # [m + 1, V]
        verification, steps = self.program.verify(logits, draft, began)
        self.state.truncate(kept + verification.accepted)  # the corrected or bonus token is fed next
        return [verification, *steps]


def run(
    runtime: Runtime,
    request: GenerationRequest,
    is_cancelled: Callable[[], bool] = lambda: False,
    drafts: DraftSources | None = None,
) -> Iterator[Started | TokenStep | BeamStep | Verification | Finished]:
    """Drives one generation (sampling or beam search) to its end on a decoder state of its own,
    checking ``is_cancelled`` before every token. A cancel that comes before the prefill is over
    raises ``Cancelled``: nothing ran that is worth keeping. ``drafts`` makes a speculative run's
    draft source (default: prompt lookup only)."""
    program = new_program(runtime, request, drafts)
    driver = (
        SpeculativeDriver(runtime, program)
        if isinstance(program, Generation) and program.drafter
        else SoloDriver(runtime, program)
    )
    started = driver.start(is_cancelled)
    if is_cancelled():
        raise Cancelled("cancelled during the prefill")
    yield started
    while not program.is_done():
        if is_cancelled():
            program.cancel()
            break
        yield from driver.step()
    yield program.finish()


class StepClock:
    """A run's timings: from its start to the first step (the prefill and the first pick), and the
    rate of the tokens made after the first step."""

    now = staticmethod(time.perf_counter)  # the clock (a test scripts it here, not on the time module)

    def __init__(self) -> None:
        self.started_at = self.now()
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.tokens_after_first = 0  # over every sample: what decode_tokens_per_s counts

    def tick(self, tokens: int) -> float:
        """Marks the end of a step that made ``tokens`` tokens; returns the time."""
        now = self.now()
        if self.first_at is None:
            self.first_at = now
        else:
            self.tokens_after_first += tokens
        self.last_at = now
        return now

    def timing(self) -> dict[str, float | None]:
        """``Finished``'s timing fields."""
        first, last = self.first_at, self.last_at
        rate = None
        if first is not None and last is not None and self.tokens_after_first and last > first:
            rate = self.tokens_after_first / (last - first)
        return {
            "time_to_first_token_ms": None if first is None else (first - self.started_at) * 1000.0,
            "decode_tokens_per_s": rate,
            "total_ms": (self.now() - self.started_at) * 1000.0,
        }


def hold_off_end(logits: np.ndarray, loop: LoopParams, new_tokens: int, eos_ids: frozenset[int]) -> np.ndarray:
    """The logits [V] the chain sees after ``new_tokens`` new tokens: before ``min_tokens`` of them,
    a copy with the end-of-sequence tokens ruled out; after, the logits themselves."""
    return without_tokens(logits, eos_ids) if new_tokens < loop.min_tokens else logits


def penalized_history(loop: LoopParams, prompt_ids: list[int], generated: list[int]) -> list[int]:
    """The tokens the penalties count: the tokens generated so far (the list itself), after the
    prompt's with ``penalize_prompt``."""
    return prompt_ids + generated if loop.penalize_prompt else generated


def without_tokens(logits: np.ndarray, ids: frozenset[int]) -> np.ndarray:
    """A copy of the logits [V] with these tokens ruled out (−inf): how ``min_tokens`` holds off
    the end-of-sequence tokens."""
    masked = logits.copy()
    masked[list(ids)] = -np.inf
    return masked


def check_token_ids(request: GenerationRequest, vocab_size: int) -> None:
    """Every token id a request names (its forced prefix, its watched tokens, its ``logit_bias`` keys) must be in the
    vocabulary: one check for sampling and beam search alike, though beam search reads no bias."""
    check_prefix(request.prefix_tokens, vocab_size)
    check_watch(request.watch, vocab_size)
    request.sampling.validate_for_vocab(vocab_size)


def check_watch(watch: tuple[int, ...], vocab_size: int) -> None:
    """Every watched token must be in the vocabulary (refused as ``logit_bias`` keys are)."""
    for i, token in enumerate(watch):
        if not 0 <= token < vocab_size:
            raise ParamError(f"watch.{i}", f"watch.{i} must be a token id from 0 to {vocab_size - 1}, got {token}")


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


def check_prefix(prefix: tuple[int, ...], vocab_size: int) -> None:
    """Every forced token must be in the vocabulary."""
    for i, token in enumerate(prefix):
        if not 0 <= token < vocab_size:
            raise ParamError(
                f"prefix_tokens.{i}", f"prefix_tokens.{i} must be a token id from 0 to {vocab_size - 1}, got {token}"
            )
