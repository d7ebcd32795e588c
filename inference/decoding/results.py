"""What a run reports, in order: ``Started`` once its prompt is in the cache, then each step's
``TokenStep``s (a speculative step's ``Verification`` before them; beam search: one ``BeamStep``),
then ``Finished``. Plain frozen values, read by the drivers' callers, the wire and the tests; the
programs that make them are ``inference.decoding.generation``'s.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from inference.decoding.origin import Origin
from inference.decoding.request import GenerationRequest
from inference.decoding.surprisal import PromptSurprisal
from inference.sampling import StepTrace
from inference.speculative.rule import Check
from inference.speculative.switch_off import SwitchedOff

StopReason = Literal["eos", "stop", "max_tokens", "cancelled"]
BeamReason = Literal["eos", "max_tokens", "cancelled"]


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


@dataclass(frozen=True)
class Proposal:
    parent: int  # the beam it extends, as numbered in the previous step
    token_id: int
    logprob: float  # of this token given the beam
    cum_logprob: float  # of the whole continuation so far


@dataclass(frozen=True)
class BeamStep:
    index: int
    kept: tuple[Proposal, ...]  # kept[i] is beam i from now on
    pruned: tuple[Proposal, ...]
    finished: tuple[Proposal, ...]
    elapsed_ms: float


@dataclass(frozen=True)
class Hypothesis:
    token_ids: tuple[int, ...]
    cum_logprob: float
    score: float
    reason: BeamReason
