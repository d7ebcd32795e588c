"""The batch's planner: what one step of continuous batching does, decided from plain states and
returned as plain data, without a model (as vLLM's scheduler returns a ``SchedulerOutput`` that its
model runner executes). ``inference.batching.scheduler``'s ``Scheduler`` describes its tickets and runs with
these states, asks ``Planner`` for the plans, and ``inference.batching.runner`` executes them.

A step is planned in two parts, because a run's prompt is encoded (and its clock started) only
when it is admitted:

1. ``Planner.intake`` — who leaves before the step, and why (``Departure``): a cancelled run or
   waiting ticket, a run with more rows than the batch. Then which waiting runs are admitted to
   which slots: in arrival order while all of a run's rows fit, each on the lowest free slots; a run
   that does not fit waits, and nobody behind it overtakes it. Slots freed by the departures are
   free for this step's admissions.
2. ``Planner.step`` — the work (``StepPlan``): the runs whose rows all take one token in **one**
   decoder call (``decode``), those that step on a decoder state of their own (``solo_decode``:
   runs without a KV cache, and every run when the cache does not live in host memory), the
   speculative runs verifying drafts (``verify``, below), then the
   prefill within a budget of prompt tokens (as vLLM's chunked prefill): ``prefill_chunk`` while
   other runs decode, ``full_prefill_chunk`` when none does. The runs still prefilling, oldest
   first, get their next prompt tokens within the budget (``Chunk``, on the run's first slot alone;
   ``SoloChunk`` on its own state, where a state without a cache takes the whole prompt in one
   call), so a long prompt never stalls the running streams for more than one chunk per step while
   several short ones all start in the same step. Fresh prompts at the head of that line that fit
   the budget whole start together in one call (``FreshGroup``), when the work the shared call
   wastes (``wasted_rows``) is below what the calls it saves cost. A chunk is never a sliver: one
   below ``MIN_PREFILL_CHUNK`` (unless it ends the prompt) waits for the next step's budget.

A speculative run with drafted tokens waiting (``RunState.drafted`` > 0) does not join the shared
decode call: its step is a ``Verify``, the pending token and its drafts (``drafted`` + 1 tokens) in
one decoder call on the run's own slot, as a ``Chunk`` feeds several prompt tokens on one slot, or
on its own state when it is solo. Those tokens count against the step's prefill budget. A
speculative run with nothing drafted this step decodes with the others.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

MIN_PREFILL_CHUNK = 16  # prompt tokens: chunks of 2 or more give the one-pass prefill's logits bit for bit, one token does not
MIN_GROUP_PROMPT = 2  # a one-token prompt alone takes the one-row path, whose logits differ by rounding
# What a decoder call costs beyond its rows, in prompt rows: on the 2-core machine a prefill call
# costs ~40 ms plus ~2 ms per prompt token (the 4-bit kernels' many-row path dequantizes every
# weight once per call, then computes every row), measured with 8 short prompts alone and together.
ROWS_PER_CALL = 20


def wasted_rows(lengths: Sequence[int]) -> int:
    """Rows a shared prefill call computes for nothing: the padding up to the longest prompt, and
    the head's rows before each prompt's last position (it computes the last longest − shortest + 1
    of every row), counted as a quarter row each (the head is ~1/4 of a layer stack's work per row)."""
    longest, spread = max(lengths), max(lengths) - min(lengths)
    return len(lengths) * longest - sum(lengths) + (len(lengths) * spread) // 4


# -- what the planner is told


@dataclass(frozen=True)
class WaitingState:
    """A ticket waiting for slots: ``rows`` is how many its run needs (``n`` samples, ``num_beams``)."""

    id: int
    rows: int
    cancelled: bool = False


@dataclass(frozen=True)
class RunState:
    """An admitted run: the slots it holds and how far its prompt (``prompt`` tokens) has come."""

    id: int
    slots: tuple[int, ...]
    prompt: int
    prefilled: int = 0
    cancelled: bool = False
    solo: bool = False  # steps on a decoder state of its own
    cached: bool = True  # keeps a KV cache (without one, every call recomputes the whole sequence)
    drafted: int = 0  # speculative: tokens drafted for this step, verified with its pending token

    @property
    def prefilling(self) -> bool:
        return self.prefilled < self.prompt


# -- the plans


class Departure(enum.Enum):
    """Why a ticket or run leaves before the step."""

    CANCELLED_WAITING = "cancelled before its turn"  # never admitted: fails with ``Cancelled``
    CANCELLED_PREFILLING = "cancelled during the prefill"  # nothing started: fails with ``Cancelled``
    CANCELLED = "cancelled"  # decoding: finishes as cancelled, with what it made
    TOO_WIDE = "needs more rows than the batch has"  # never fits: fails with a ``ParamError``


@dataclass(frozen=True)
class Leave:
    id: int
    why: Departure


@dataclass(frozen=True)
class Admit:
    """Waiting ticket ``id`` becomes a run holding ``slots``."""

    id: int
    slots: tuple[int, ...]


@dataclass(frozen=True)
class Intake:
    leave: tuple[Leave, ...] = ()  # runs first, then waiting tickets, each in arrival order
    admit: tuple[Admit, ...] = ()  # in arrival order


@dataclass(frozen=True)
class FreshGroup:
    """Whole prompts of runs ``runs``, none begun, in one decoder call, each into its first slot."""

    runs: tuple[int, ...]


@dataclass(frozen=True)
class Chunk:
    """Prompt tokens ``begin:end`` of run ``run`` into its first slot, alone in a decoder call."""

    run: int
    begin: int
    end: int


@dataclass(frozen=True)
class SoloChunk:
    """Prompt tokens ``begin:end`` of run ``run`` on its own decoder state."""

    run: int
    begin: int
    end: int


@dataclass(frozen=True)
class Verify:
    """Run ``run``'s pending token and its ``tokens`` - 1 drafted ones in one decoder call on its
    own slot (or its own state, when solo): the logits after each [tokens, V]."""

    run: int
    tokens: int


Prefill = FreshGroup | Chunk | SoloChunk


@dataclass(frozen=True)
class StepPlan:
    """One step's work: the decoding first, then the prefill entries in their order."""

    decode: tuple[int, ...] = ()  # runs whose rows each take one token, all in one decoder call
    solo_decode: tuple[int, ...] = ()  # runs taking one token each on their own decoder state
    verify: tuple[Verify, ...] = ()  # speculative runs verifying their drafts, one call each
    prefill: tuple[Prefill, ...] = ()
    budget: int = 0  # prompt tokens this step's prefill could take


# -- the policy


@dataclass(frozen=True)
class Planner:
    """Plans the steps of a batch of ``max_batch`` slots; see the module's docstring."""

    max_batch: int
    prefill_chunk: int  # prompt tokens per step while other runs decode
    full_prefill_chunk: int  # prompt tokens per step while none does

    def __post_init__(self) -> None:
        if self.max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {self.max_batch}")
        if not 1 <= self.prefill_chunk <= self.full_prefill_chunk:
            raise ValueError(f"prefill_chunk must be from 1 to {self.full_prefill_chunk}, got {self.prefill_chunk}")

    def intake(self, waiting: Sequence[WaitingState], runs: Sequence[RunState]) -> Intake:
        """Departures before the step, then admissions into the slots left free (both in arrival order)."""
        leave: list[Leave] = []
        held: set[int] = set()
        for run in runs:
            if run.cancelled:
                leave.append(Leave(run.id, Departure.CANCELLED_PREFILLING if run.prefilling else Departure.CANCELLED))
            else:
                held.update(run.slots)
        free = [slot for slot in range(self.max_batch) if slot not in held]
        admit: list[Admit] = []
        blocked = False  # an earlier ticket waits for rows: nobody overtakes it
        for ticket in waiting:
            if ticket.cancelled:
                leave.append(Leave(ticket.id, Departure.CANCELLED_WAITING))
            elif ticket.rows > self.max_batch:
                leave.append(Leave(ticket.id, Departure.TOO_WIDE))
            elif not blocked and ticket.rows <= len(free):
                admit.append(Admit(ticket.id, tuple(free[: ticket.rows])))
                free = free[ticket.rows :]
            else:
                blocked = True
        return Intake(tuple(leave), tuple(admit))

    def step(self, runs: Sequence[RunState]) -> StepPlan:
        """The step's work for the admitted ``runs`` (in arrival order, none cancelled)."""
        decoding = [run for run in runs if not run.prefilling]
        verify = tuple(Verify(run.id, run.drafted + 1) for run in decoding if run.drafted)
        plain = [run for run in decoding if not run.drafted]
        budget = max(0, (self.prefill_chunk if decoding else self.full_prefill_chunk) - sum(v.tokens for v in verify))
        return StepPlan(
            decode=tuple(run.id for run in plain if not run.solo),
            solo_decode=tuple(run.id for run in plain if run.solo),
            verify=verify,
            prefill=self._prefill([run for run in runs if run.prefilling], budget),
            budget=budget,
        )

    def _prefill(self, prefilling: list[RunState], budget: int) -> tuple[Prefill, ...]:
        """The prefilling runs' next prompt tokens, oldest first, within ``budget``."""
        work: list[Prefill] = []
        while prefilling and budget > 0:
            group = fresh_group(prefilling, budget)
            if len(group) > 1:
                work.append(FreshGroup(tuple(run.id for run in group)))
                budget -= sum(run.prompt for run in group)
                prefilling = prefilling[len(group) :]
                continue
            run = prefilling.pop(0)
            remaining = run.prompt - run.prefilled
            chunk = min(budget, remaining)
            if chunk < min(remaining, MIN_PREFILL_CHUNK):
                break  # a sliver of a budget: the next step's (a one-token chunk would change the prompt's logits)
            budget -= chunk
            if not run.solo:
                work.append(Chunk(run.id, run.prefilled, run.prefilled + chunk))
            elif run.cached:
                work.append(SoloChunk(run.id, run.prefilled, run.prefilled + chunk))
            else:  # a state without a cache recomputes everything at each call: the prompt in one
                work.append(SoloChunk(run.id, run.prefilled, run.prompt))
        return tuple(work)


def fresh_group(prefilling: Sequence[RunState], budget: int) -> list[RunState]:
    """The oldest prefilling runs, in order, that are worth starting together in one decoder
    call: none begun, none solo, each whole prompt (``MIN_GROUP_PROMPT`` tokens or more) within
    ``budget``, and the work the shared call wastes below what the calls it saves cost."""
    group: list[RunState] = []
    for run in prefilling:
        if run.solo or run.prefilled or not MIN_GROUP_PROMPT <= run.prompt <= budget:
            break
        lengths = [other.prompt for other in group] + [run.prompt]
        if wasted_rows(lengths) > ROWS_PER_CALL * (len(lengths) - 1):
            break
        group.append(run)
        budget -= run.prompt
    return group
