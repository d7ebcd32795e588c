"""The batch's runner: executes a ``StepPlan`` (``inference.batching.plan``) against the decoder and
the key/value cache, and leaves each run the logits of its rows. It decides nothing: which rows
decode, which prompts prefill which tokens and which run alone all come in the plan.

The runner owns one cache of ``max_batch`` rows (*slots*), ``[max_batch, kv_heads, capacity,
head_dim]`` per layer and kind; a run's rows live in the slots it holds (their old keys and values
are simply overwritten when a new run takes them).

- ``decode``: one token for every decoding run's rows in **one** decoder call. The rows have
  different lengths, so the attention mask is right-padded per row and the positions count from
  each row's own past (``Decoder.run_rows``). The call covers the contiguous range of slots from
  the lowest to the highest row fed; a slot in that range that is not fed this step (free, or
  prefilling) gets a filler token at its own length, whose key and value land just past what it
  holds and are overwritten by its next real token, so nothing it holds changes.
- ``solo_decode``, ``SoloChunk``: a run on a decoder state of its own (``SoloDriver``).
- ``FreshGroup``: several fresh prompts in one call (right-padded rows, each attending to its own
  length: ``Decoder.prefill_fresh_rows``).
- ``Chunk``: the next tokens of one prompt on its run's first slot alone.
- ``Verify``: a speculative run's pending token and drafted tokens in one call on its slot (or its
  own state), with the logits after each. Once the program has judged them, ``BatchRun.keep``
  rolls the run back past the rejected drafts by its length alone: what lies past a row's length
  is never read (the attention mask stops at each row's length) and its next feed writes over it.

A prompt whose prefill ends has its cache copied to the run's other rows (every sample starts from
it). A decoder call that fails ends the runs it was for, and no other: the runner reports them.

Every call runs under ``call_stop.stopping_when`` the cancel flags of the runs it is for: once all
of them are cancelled (a closed connection), ONNX Runtime stops it between two nodes, and the runs
are left as they were before it (no logits, nothing counted), for the next intake to end as
cancelled. A call with one run still wanted, or for a run without a flag, runs to its end.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import numpy as np

from inference.batching.plan import Chunk, FreshGroup, RunState, SoloChunk, StepPlan, Verify
from inference.call_stop import CancelFlag, Terminated, stopping_when
from inference.decoding.generation import Program, SoloDriver
from inference.kv_cache import KVCache
from inference.runtime import Runtime
from inference.speculative import Draft

log = logging.getLogger(__name__)


@dataclass
class BatchRun:
    """An admitted run: its program, its slots and how far it has come."""

    id: int
    program: Program
    slots: list[int]
    prompt: list[int]
    solo: SoloDriver | None = None  # runs on a decoder state of its own
    prefilled: int = 0  # prompt tokens fed so far
    length: int = 0  # cached positions of each of its rows (once prefilled)
    active: int = 1  # rows in use: 1 while prefilling, then as its feeds say
    logits: np.ndarray | None = None  # [active, V] not yet handed to the program ([m + 1, V] after a ``Verify``)
    began: float = field(default_factory=time.perf_counter)
    draft: Draft | None = None  # speculative: the tokens drafted for this step, until they are judged
    verified_from: int = 0  # speculative: the cached positions before the last ``Verify`` fed its tokens
    cancel: CancelFlag | None = None  # its request's: stops the decoder calls made for it alone (None: never)

    @property
    def prefilling(self) -> bool:
        return self.prefilled < len(self.prompt)

    def state(self, cancelled: bool = False) -> RunState:
        """What the planner sees of it."""
        cached = self.solo is None or self.solo.state.use_cache
        drafted = 0 if self.draft is None else len(self.draft.tokens)
        return RunState(
            self.id, tuple(self.slots), len(self.prompt), self.prefilled, cancelled, self.solo is not None, cached, drafted
        )

    def keep(self, accepted: int) -> None:
        """After a ``Verify``: the cache keeps the pending token and the ``accepted`` drafts; the
        positions of the rejected ones are forgotten (the next feed writes over them)."""
        kept = self.verified_from + 1 + accepted
        if self.solo is not None:
            self.solo.state.truncate(kept)
        else:
            self.length = kept
        self.draft = None


@dataclass
class Outcome:
    """What executing a plan left for the scheduler: runs whose prompt is now in the cache (in the
    plan's order), and runs whose decoder call failed, with the error."""

    prefilled: list[BatchRun] = field(default_factory=list)
    failed: list[tuple[BatchRun, BaseException]] = field(default_factory=list)


class BatchRunner:
    """Executes plans on one cache of ``max_batch`` slots; see the module's docstring."""

    def __init__(self, runtime: Runtime, max_batch: int) -> None:
        self.runtime = runtime
        self.max_batch = max_batch
        self.cache: KVCache = runtime.decoder.empty_past(max_batch)
        self.batched = self.cache.device == "cpu"  # row views need host buffers; else every run is solo
        self._filler = min(runtime.codec.eos_ids)

    def release_memory(self) -> None:
        """Nobody holds a slot: a cache grown for long runs goes back to its smallest."""
        if self.cache.capacity > KVCache.MIN_CAPACITY:
            self.cache = self.runtime.decoder.empty_past(self.max_batch)

    def execute(self, plan: StepPlan, runs: Mapping[int, BatchRun]) -> Outcome:
        """Runs ``plan`` over ``runs`` (every admitted run, by id): each run it names is left with
        its next logits, or is reported failed."""
        outcome = Outcome()
        seats = {slot: run for run in runs.values() if run.solo is None for slot in run.slots}  # rows in the cache
        self._guarded(outcome, [runs[i] for i in plan.decode], lambda group: self._decode(group, seats))
        for i in plan.solo_decode:
            self._guarded(outcome, [runs[i]], self._solo_decode)
        for verify in plan.verify:
            self._guarded(outcome, [runs[verify.run]], lambda group, verify=verify: self._verify(group[0], verify, seats))
        for entry in plan.prefill:
            match entry:
                case FreshGroup(ids):
                    group = [runs[i] for i in ids]
                    self._guarded(outcome, group, lambda group: self._fresh_group(group, seats, outcome))
                case Chunk(i, begin, end):
                    self._guarded(outcome, [runs[i]], lambda group: self._chunk(group[0], begin, end, seats, outcome))
                case SoloChunk(i, begin, end):
                    self._guarded(outcome, [runs[i]], lambda group: self._solo_chunk(group[0], begin, end, outcome))
        return outcome

    @staticmethod
    def _guarded(outcome: Outcome, runs: list[BatchRun], action: Callable[[list[BatchRun]], None]) -> None:
        """Runs a decoder call, stopped once every run it is for is cancelled (they are then left
        for the next intake); a failure is reported for the runs it was for, and no other."""
        if not runs:
            return
        try:
            with stopping_for(runs):
                action(runs)
        except Terminated:
            log.info("a decoder call for %d cancelled run(s) was stopped mid-way", len(runs))
        except Exception as error:  # noqa: BLE001
            log.exception("a decoder call for %d run(s) failed", len(runs))
            outcome.failed.extend((run, error) for run in runs)

    def _decode(self, runs: list[BatchRun], seats: Mapping[int, BatchRun]) -> None:
        """One token for every row of ``runs``, in one decoder call over the slots they span."""
        tokens: dict[int, int] = {}  # slot → token
        for run in runs:
            feed = run.program.feed()
            if feed.parents is not None:  # beams: each row continues the cache of its parent row
                self.cache.copy_rows(run.slots[: len(feed.parents)], [run.slots[p] for p in feed.parents], run.length)
            run.active = len(feed.tokens)
            tokens.update(zip(run.slots[: run.active], feed.tokens.tolist()))
        low, high = min(tokens), max(tokens) + 1
        lengths = np.array([_slot_length(seats, slot) for slot in range(low, high)], dtype=np.int64)  # [R]
        ids = np.array([[tokens.get(slot, self._filler)] for slot in range(low, high)], dtype=np.int64)  # [R, 1]
        self.cache.reserve(int(lengths.max()) + 1, self._longest(seats))
        began = time.perf_counter()
        logits = self.runtime.decoder.run_rows(ids, self.cache, lengths, low)  # [R, V]
        for run in runs:
            run.logits = logits[[slot - low for slot in run.slots[: run.active]]]
            run.length += 1
            run.began = began

    def _solo_decode(self, runs: list[BatchRun]) -> None:
        run = runs[0]
        assert run.solo is not None
        run.began = time.perf_counter()
        run.logits = run.solo.next_logits()
        run.active = len(run.logits)

    def _verify(self, run: BatchRun, verify: Verify, seats: Mapping[int, BatchRun]) -> None:
        """The pending token and the drafts in one call on the run's first slot (or its own
        state); the run is left the logits after each [m + 1, V] and holds all of them until
        ``BatchRun.keep``."""
        assert run.draft is not None and verify.tokens == len(run.draft.tokens) + 1
        pending = int(run.program.feed().tokens[0])
        ids = np.array([[pending, *run.draft.tokens]], dtype=np.int64)  # [1, m + 1]
        run.began = time.perf_counter()
        run.active = 1
        if run.solo is not None:
            run.verified_from = run.solo.state.length
            run.logits = run.solo.state.append_tokens(ids, all_logits=True)[0]  # [m + 1, V]
            return
        run.verified_from = run.length
        self.cache.reserve(run.length + verify.tokens, self._longest(seats))
        logits = self.runtime.decoder.run_rows(ids, self.cache, np.array([run.length]), run.slots[0], all_logits=True)
        run.logits = logits[0]  # [m + 1, V]
        run.length += verify.tokens

    def _fresh_group(self, runs: list[BatchRun], seats: Mapping[int, BatchRun], outcome: Outcome) -> None:
        """Several fresh prompts in one decoder call (``Decoder.prefill_fresh_rows``), each into its first slot."""
        self.cache.reserve(max(len(run.prompt) for run in runs), self._longest(seats))
        began = time.perf_counter()
        scored = any(run.program.surprisal is not None for run in runs)  # then every position's logits: [G, S, V]
        logits = self.runtime.decoder.prefill_fresh_rows(
            [run.prompt for run in runs], self.cache, [run.slots[0] for run in runs], all_logits=scored
        )
        if scored:
            for run, rows in zip(runs, logits):
                if run.program.surprisal is not None:
                    run.program.surprisal.observe(0, rows[: len(run.prompt)])
            logits = logits[np.arange(len(runs)), [len(run.prompt) - 1 for run in runs]]  # [G, V]
        for run, row in zip(runs, logits):
            run.began = began
            run.prefilled = len(run.prompt)
            # [1, V]; one failing ends alone
            self._guarded(outcome, [run], lambda _, run=run, row=row: self._prefilled(run, row[None, :], outcome))

    def _chunk(self, run: BatchRun, begin: int, end: int, seats: Mapping[int, BatchRun], outcome: Outcome) -> None:
        """Prompt tokens ``begin:end`` on ``run``'s first slot alone."""
        ids = np.array([run.prompt[begin:end]], dtype=np.int64)  # [1, S]
        run.began = time.perf_counter()
        self.cache.reserve(end, self._longest(seats))
        surprisal = run.program.surprisal
        logits = self.runtime.decoder.run_rows(ids, self.cache, np.array([begin]), run.slots[0], surprisal is not None)
        if surprisal is not None:  # [1, S, V]
            surprisal.observe(begin, logits[0])
            logits = logits[:, -1, :]  # [1, V]
        run.prefilled = end
        if not run.prefilling:
            self._prefilled(run, logits, outcome)

    def _solo_chunk(self, run: BatchRun, begin: int, end: int, outcome: Outcome) -> None:
        """Prompt tokens ``begin:end`` on ``run``'s own decoder state."""
        assert run.solo is not None
        ids = np.array([run.prompt[begin:end]], dtype=np.int64)  # [1, S]
        run.began = time.perf_counter()
        surprisal = run.program.surprisal
        logits = run.solo.state.append_tokens(ids, all_logits=surprisal is not None)
        if surprisal is not None:  # [1, S, V]
            surprisal.observe(begin, logits[0])
            logits = logits[:, -1, :]  # [1, V]
        run.prefilled = end
        if not run.prefilling:  # its state's rows start from the prompt
            self._started(run, run.solo.spread(logits), outcome)

    def _prefilled(self, run: BatchRun, logits: np.ndarray, outcome: Outcome) -> None:
        """``run``'s prompt is in its first slot and ``logits`` [1, V] are its last position's:
        the prompt's cache is copied to the run's other rows (every sample starts from it)."""
        rows = run.program.rows_after_prefill
        if rows > 1:
            self.cache.copy_rows(run.slots[1:rows], [run.slots[0]] * (rows - 1), len(run.prompt))
            logits = np.repeat(logits, rows, axis=0)
        self._started(run, logits, outcome)

    @staticmethod
    def _started(run: BatchRun, logits: np.ndarray, outcome: Outcome) -> None:
        """``run``'s rows hold its prompt, and ``logits`` [rows, V] are theirs."""
        run.length = len(run.prompt)
        run.active = len(logits)
        run.logits = logits
        outcome.prefilled.append(run)

    def _longest(self, seats: Mapping[int, BatchRun]) -> int:
        """Positions to keep when the cache grows: the longest any slot holds."""
        return max((_slot_length(seats, slot) for slot in range(self.max_batch)), default=0)


def stopping_for(runs: list[BatchRun]) -> AbstractContextManager[object]:
    """The decoder calls made inside stop once every one of ``runs`` is cancelled (never when one
    of them has no cancel flag to watch)."""
    flags = [run.cancel for run in runs]
    if any(flag is None for flag in flags):
        return nullcontext()
    return stopping_when([flag for flag in flags if flag is not None])


def _slot_length(seats: Mapping[int, BatchRun], slot: int) -> int:
    """Positions slot ``slot`` holds: where a token fed to it lands."""
    run = seats.get(slot)
    if run is None:
        return 0
    return run.prefilled if run.prefilling else run.length
