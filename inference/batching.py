"""Continuous batching: many runs decoded as one ONNX Runtime batch per step, joining and leaving
between steps.

The ``Scheduler`` owns one key/value cache of ``max_batch`` rows (*slots*), ``[max_batch, kv_heads,
capacity, head_dim]`` per layer and kind. A run (a ``generation`` program: sampling or beam search)
holds as many slots as it has rows (``n`` samples, ``num_beams`` beams) from the moment it is
admitted until it ends; a run that ends frees its slots at once and the next run reuses them
(their old keys and values are simply overwritten).

Each iteration of ``step``:

1. takes new tickets in, then admits waiting runs in arrival order while there are free slots for
   all of a run's rows (a run never overtakes an earlier one);
2. looks at every run's cancel flag: a run still prefilling ends with ``Cancelled`` (nothing
   started), a decoding one is cancelled and finishes;
3. feeds one token to every decoding run's rows in **one** decoder call: the rows have different
   lengths, so the attention mask is right-padded per row and the positions count from each row's
   own past (``Decoder.run_rows``). The call covers the contiguous range of slots from the lowest
   to the highest decoding row; a slot in that range that is not decoding this step (free, or
   prefilling) is fed a filler token at its own length, whose key and value land just past what
   it holds and are overwritten by its next real token, so nothing it holds changes;
4. prefills within a budget of prompt tokens per step (as vLLM's chunked prefill):
   ``prefill_chunk`` while other runs decode, ``full_prefill_chunk`` when none does. The runs
   still prefilling, oldest first, get their next prompt tokens within the budget, each on its
   first slot alone, so a long prompt never stalls the running streams for more than one chunk
   per step while several short ones all start in the same step. Fresh prompts at the head of
   that line that fit the budget whole start **together**, in one decoder call (right-padded
   rows, each attending to its own length: ``Decoder.prefill_fresh_rows``), so a burst of
   arrivals costs one call instead of one each. A prompt whose prefill ends has its cache copied
   to its other rows;
5. hands each run the logits of its rows and passes its tokens on; a run that has ended delivers
   its summary and leaves.

Every run keeps its own program (sampler chains, seeds, random generators, stop strings,
penalty histories, traces): the scheduler only moves logits and tokens. Runs without a KV cache,
and every run when the cache does not live in host memory (row views of the buffers need it), are
*solo*: each has a decoder state of its own and gets one step per iteration beside the batch.

Exactness: a row's logits in a batch equal the same sequence decoded alone up to the batch
arithmetic's float rounding (measured in tests/inference/test_batching.py; docs/websocket-api.md
gives the figures), so greedy runs give the same tokens and seeded runs the same draws, except
where two candidates are tied to within that rounding.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from inference.batch_params import DEFAULT_MAX_BATCH, PREFILL_CHUNK_BESIDE_DECODE
from inference.beam import BeamStep
from inference.engine import KVCache
from inference.errors import Cancelled, ParamError
from inference.generation import Finished, GenerationRequest, Program, SoloDriver, Started, TokenStep, new_program
from inference.prefill import PREFILL_CHUNK
from inference.runtime import Runtime

log = logging.getLogger(__name__)

MIN_PREFILL_CHUNK = 16  # prompt tokens: chunks of 2 or more give the one-pass prefill's logits bit for bit, one token does not
MIN_GROUP_PROMPT = 2  # a one-token prompt alone takes the one-row path, whose logits differ by rounding
# What a decoder call costs beyond its rows, in prompt rows: on the 2-core machine a prefill call
# costs ~40 ms plus ~2 ms per prompt token (the 4-bit kernels' many-row path dequantizes every
# weight once per call, then computes every row), measured with 8 short prompts alone and together.
ROWS_PER_CALL = 20


def wasted_rows(lengths: list[int]) -> int:
    """Rows a shared prefill call computes for nothing: the padding up to the longest prompt, and
    the head's rows before each prompt's last position (it computes the last longest − shortest + 1
    of every row), counted as a quarter row each (the head is ~1/4 of a layer stack's work per row)."""
    longest, spread = max(lengths), max(lengths) - min(lengths)
    return len(lengths) * longest - sum(lengths) + (len(lengths) * spread) // 4


@dataclass(frozen=True)
class Slots:
    """Where a run sits in the batch: ``started``'s ``batch`` field."""

    slots: tuple[int, ...]
    max_batch: int


@dataclass(frozen=True)
class BatchStep:
    """One step of the batch: ``token``'s ``batch`` field. ``rows`` and ``requests`` count the
    rows and runs that took a token in this step."""

    step: int
    rows: int
    requests: int


Item = Started | TokenStep | BeamStep | Finished


@dataclass
class Ticket:
    """A run handed to the scheduler, and where its results go. ``deliver`` gets ``Started`` (with
    its ``Slots``), each ``TokenStep``/``BeamStep`` (with the ``BatchStep``), then ``Finished``
    (with None); ``fail`` gets the exception that ended it otherwise (``Cancelled`` before it
    started, ``ParamError``, or any failure). Both are called on the scheduler's thread; after
    ``Finished`` or ``fail`` the ticket is over."""

    request: GenerationRequest
    is_cancelled: Callable[[], bool]
    deliver: Callable[[Item, Slots | BatchStep | None], None]
    fail: Callable[[BaseException], None]


@dataclass
class _Run:
    """An admitted ticket: its program, its slots and how far it has come."""

    ticket: Ticket
    program: Program
    slots: list[int]
    prompt: list[int]
    solo: SoloDriver | None = None  # runs on a decoder state of its own
    prefilled: int = 0  # prompt tokens fed so far
    length: int = 0  # cached positions of each of its rows (once prefilled)
    active: int = 1  # rows in use: 1 while prefilling, then as its feeds say
    logits: np.ndarray | None = None  # [active, V] not yet handed to the program
    began: float = field(default_factory=time.perf_counter)

    @property
    def prefilling(self) -> bool:
        return self.prefilled < len(self.prompt)


class Scheduler:
    """Decodes many runs as one batch per step; see the module's docstring. ``submit`` may be
    called from any thread; ``step`` and ``serve_forever`` run on one thread of their own."""

    def __init__(
        self,
        runtime: Runtime,
        max_batch: int = DEFAULT_MAX_BATCH,
        prefill_chunk: int = PREFILL_CHUNK_BESIDE_DECODE,
        full_prefill_chunk: int = PREFILL_CHUNK,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        if not 1 <= prefill_chunk <= full_prefill_chunk:
            raise ValueError(f"prefill_chunk must be from 1 to {full_prefill_chunk}, got {prefill_chunk}")
        self.runtime = runtime
        self.max_batch = max_batch
        self.prefill_chunk = prefill_chunk
        self.full_prefill_chunk = full_prefill_chunk
        self.steps = 0  # decode steps so far: ``BatchStep.step``
        self._intake: queue.SimpleQueue[Ticket] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._waiting: deque[Ticket] = deque()
        self._head: tuple[Ticket, Program] | None = None  # the oldest waiting ticket's program, once made
        self._runs: list[_Run] = []  # admitted, in arrival order
        self._owner: list[_Run | None] = [None] * max_batch  # slot → the run holding it
        self._cache: KVCache = runtime.decoder.empty_past(max_batch)
        self._batched = self._cache.device == "cpu"  # row views need host buffers; else every run is solo
        self._filler = min(runtime.codec.eos_ids)

    # -- any thread

    def submit(self, ticket: Ticket) -> None:
        self._intake.put(ticket)
        self._wake.set()

    def load(self) -> dict[str, int]:
        """What the worker's ping reports: runs decoding, slots in use, runs waiting or prefilling."""
        runs = list(self._runs)
        running = sum(1 for run in runs if not run.prefilling)
        return {
            "running": running,
            "rows": sum(len(run.slots) for run in runs),
            "waiting": len(runs) - running + len(self._waiting) + self._intake.qsize(),
            "max_batch": self.max_batch,
        }

    # -- the scheduler's thread

    def serve_forever(self, stop: threading.Event) -> None:
        """Steps while there is work; sleeps until a ticket arrives otherwise."""
        while not stop.is_set():
            try:
                busy = self.step()
            except Exception as error:  # noqa: BLE001 — e.g. a listener failing: end what ran, keep serving
                log.exception("a batch step failed; ending the runs it held")
                self._abandon(error)
                continue
            if not busy:
                self._wake.wait(0.5)
                self._wake.clear()

    def _abandon(self, error: BaseException) -> None:
        for run in list(self._runs):
            self._release(run)
            try:
                run.ticket.fail(error)
            except Exception:  # noqa: BLE001
                log.exception("could not tell a run that it failed")

    def idle(self) -> bool:
        return not self._runs and not self._waiting and self._intake.empty()

    def step(self) -> bool:
        """One iteration (see the module's docstring); returns whether there was anything to do."""
        self._take_in()
        self._admit()
        self._check_cancels()
        if not self._runs:
            if self._cache.capacity > KVCache.MIN_CAPACITY:  # nobody holds anything: give the memory back
                self._cache = self.runtime.decoder.empty_past(self.max_batch)
            return bool(self._waiting)
        decoding = [run for run in self._runs if not run.prefilling and run.logits is None and run.solo is None]
        self._guarded(decoding, self._decode)
        for run in [run for run in self._runs if run.solo is not None and not run.prefilling and run.logits is None]:
            self._guarded([run], self._solo_step)
        others_decode = any(not run.prefilling for run in self._runs)
        budget = self.prefill_chunk if others_decode else self.full_prefill_chunk  # prompt tokens this step
        prefilling = [run for run in self._runs if run.prefilling]
        while prefilling and budget > 0:
            group = self._fresh_group(prefilling, budget)
            if len(group) > 1:
                budget -= sum(len(run.prompt) for run in group)
                self._guarded(group, self._prefill_group)
                prefilling = prefilling[len(group) :]
                continue
            run = prefilling.pop(0)
            remaining = len(run.prompt) - run.prefilled
            chunk = min(budget, remaining)
            if chunk < min(remaining, MIN_PREFILL_CHUNK):
                break  # a sliver of a budget: the next step's (a one-token chunk would change the prompt's logits)
            budget -= chunk
            self._guarded([run], lambda runs, chunk=chunk: self._prefill(runs[0], chunk))
        self._advance()
        return True

    def _take_in(self) -> None:
        while True:
            try:
                self._waiting.append(self._intake.get_nowait())
            except queue.Empty:
                return

    def _admit(self) -> None:
        """Waiting tickets become runs, oldest first, while their rows fit."""
        while self._waiting:
            ticket = self._waiting[0]
            try:
                if self._head is not None and self._head[0] is ticket:
                    program = self._head[1]  # made while it waited for rows: not again every step
                else:
                    program = new_program(self.runtime, ticket.request)
                    self._head = (ticket, program)
                if program.rows > self.max_batch:
                    field_name = "num_beams" if ticket.request.loop.num_beams > 1 else "n"
                    raise ParamError(
                        field_name,
                        f"{field_name} = {program.rows} needs {program.rows} rows; this worker decodes at most {self.max_batch}",
                    )
            except Exception as error:  # noqa: BLE001 — a bad request ends alone
                self._waiting.popleft()
                ticket.fail(error)
                continue
            free = [slot for slot, owner in enumerate(self._owner) if owner is None]
            if len(free) < program.rows:
                return  # it waits for rows to free: nobody overtakes it
            self._waiting.popleft()
            self._head = None
            try:
                prompt = program.prepare()
            except Exception as error:  # noqa: BLE001
                ticket.fail(error)
                continue
            run = _Run(ticket, program, free[: program.rows], prompt)
            if not self._batched or not ticket.request.use_cache:
                run.solo = SoloDriver(self.runtime, program)
            for slot in run.slots:
                self._owner[slot] = run
            self._runs.append(run)

    def _check_cancels(self) -> None:
        """Cancelled tickets leave: unstarted ones with ``Cancelled``, started ones finish as cancelled."""
        for ticket in [ticket for ticket in self._waiting if ticket.is_cancelled()]:
            self._waiting.remove(ticket)
            ticket.fail(Cancelled("cancelled before its turn"))
        for run in [run for run in self._runs if run.ticket.is_cancelled()]:
            if run.prefilling:
                self._end(run, Cancelled("cancelled during the prefill"))
            else:
                run.program.cancel()
                self._finish(run)

    def _guarded(self, runs: list[_Run], action: Callable[[list[_Run]], None]) -> None:
        """Runs a decoder call; a failure ends the runs it was for, and no other."""
        if not runs:
            return
        try:
            action(runs)
        except Exception as error:  # noqa: BLE001
            log.exception("a decoder call for %d run(s) failed", len(runs))
            for run in runs:
                if run in self._runs:
                    self._end(run, error)

    def _decode(self, runs: list[_Run]) -> None:
        """One token for every row of ``runs``, in one decoder call over the slots they span."""
        tokens: dict[int, int] = {}  # slot → token
        for run in runs:
            feed = run.program.feed()
            if feed.parents is not None:  # beams: each row continues the cache of its parent row
                self._cache.copy_rows(run.slots[: len(feed.parents)], [run.slots[p] for p in feed.parents], run.length)
            run.active = len(feed.tokens)
            tokens.update(zip(run.slots[: run.active], feed.tokens.tolist()))
        low, high = min(tokens), max(tokens) + 1
        lengths = np.array([self._slot_length(slot) for slot in range(low, high)], dtype=np.int64)  # [R]
        ids = np.array([[tokens.get(slot, self._filler)] for slot in range(low, high)], dtype=np.int64)  # [R, 1]
        self._cache.reserve(int(lengths.max()) + 1, self._longest())
        began = time.perf_counter()
        logits = self.runtime.decoder.run_rows(ids, self._cache, lengths, low)  # [R, V]
        for run in runs:
            run.logits = logits[[slot - low for slot in run.slots[: run.active]]]
            run.length += 1
            run.began = began

    def _solo_step(self, runs: list[_Run]) -> None:
        run = runs[0]
        assert run.solo is not None
        run.began = time.perf_counter()
        run.logits = run.solo.next_logits()
        run.active = len(run.logits)

    def _fresh_group(self, prefilling: list[_Run], budget: int) -> list[_Run]:
        """The oldest prefilling runs, in order, that are worth starting together in one decoder
        call: none begun, none solo, each whole prompt (2 tokens or more) within the step's budget,
        and the work the shared call wastes below what the calls it saves cost (``wasted_rows``)."""
        group: list[_Run] = []
        for run in prefilling:
            size = len(run.prompt)
            if run.solo is not None or run.prefilled or not MIN_GROUP_PROMPT <= size <= budget:
                break
            lengths = [len(other.prompt) for other in group] + [size]
            if wasted_rows(lengths) > ROWS_PER_CALL * (len(lengths) - 1):
                break
            group.append(run)
            budget -= size
        return group

    def _prefill_group(self, runs: list[_Run]) -> None:
        """Several fresh prompts in one decoder call (``Decoder.prefill_fresh_rows``), each into its first slot."""
        self._cache.reserve(max(len(run.prompt) for run in runs), self._longest())
        began = time.perf_counter()
        logits = self.runtime.decoder.prefill_fresh_rows(
            [run.prompt for run in runs], self._cache, [run.slots[0] for run in runs]
        )
        for run, row in zip(runs, logits):
            run.began = began
            run.prefilled = len(run.prompt)
            self._guarded([run], lambda _, run=run, row=row: self._prefilled(run, row[None, :]))  # [1, V]; one failing ends alone

    def _prefill(self, run: _Run, chunk: int) -> None:
        """The next chunk of ``run``'s prompt on its first slot alone (or its own state)."""
        if run.solo is not None and not run.solo.state.use_cache:
            chunk = len(run.prompt)  # a state without a cache recomputes everything: one call
        ids = np.array([run.prompt[run.prefilled : run.prefilled + chunk]], dtype=np.int64)  # [1, S]
        run.began = time.perf_counter()
        if run.solo is not None:
            logits = run.solo.state.append_tokens(ids)
        else:
            slot = run.slots[0]
            self._cache.reserve(run.prefilled + ids.shape[1], self._longest())
            logits = self.runtime.decoder.run_rows(ids, self._cache, np.array([run.prefilled]), slot)
        run.prefilled += ids.shape[1]
        if not run.prefilling:
            self._prefilled(run, logits)

    def _prefilled(self, run: _Run, logits: np.ndarray) -> None:
        """``run``'s prompt is in the cache and ``logits`` [1, V] are its last position's: its rows
        start from it, and it has started."""
        run.length = len(run.prompt)
        rows = run.program.rows_after_prefill
        if run.solo is not None:
            logits = run.solo.spread(logits)
        elif rows > 1:  # every sample starts from the prompt's cache
            self._cache.copy_rows(run.slots[1:rows], [run.slots[0]] * (rows - 1), run.length)
            logits = np.repeat(logits, rows, axis=0)
        run.active = rows
        run.logits = logits
        if run.ticket.is_cancelled():
            self._end(run, Cancelled("cancelled during the prefill"))
            return
        run.ticket.deliver(run.program.started(), Slots(tuple(run.slots), self.max_batch))

    def _advance(self) -> None:
        """Every run with logits takes its tokens; this is one step of the batch."""
        ready = [run for run in self._runs if run.logits is not None]
        if not ready:
            return
        self.steps += 1
        info = BatchStep(self.steps, sum(run.active for run in ready), len(ready))
        for run in ready:
            logits, run.logits = run.logits, None
            try:
                items = run.program.advance(logits, run.began)
            except Exception as error:  # noqa: BLE001 — e.g. a sampler stage refusing these logits
                self._end(run, error)
                continue
            for item in items:
                run.ticket.deliver(item, info)
            if run.program.is_done():
                self._finish(run)

    def _finish(self, run: _Run) -> None:
        self._release(run)
        run.ticket.deliver(run.program.finish(), None)

    def _end(self, run: _Run, error: BaseException) -> None:
        self._release(run)
        run.ticket.fail(error)

    def _release(self, run: _Run) -> None:
        """The run leaves: its slots are free for the next run at once."""
        if run in self._runs:
            self._runs.remove(run)
        for slot in run.slots:
            if self._owner[slot] is run:
                self._owner[slot] = None

    def _slot_length(self, slot: int) -> int:
        """Positions slot ``slot`` holds: where a token fed to it lands."""
        run = self._owner[slot]
        if run is None or run.solo is not None:
            return 0
        return run.prefilled if run.prefilling else run.length

    def _longest(self) -> int:
        """Positions to keep when the cache grows: the longest any slot holds."""
        return max((self._slot_length(slot) for slot in range(self.max_batch)), default=0)


def serve_in_thread(scheduler: Scheduler, name: str = "decode") -> tuple[threading.Thread, threading.Event]:
    """Starts ``scheduler.serve_forever`` on a daemon thread; returns it and the event that stops it."""
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.serve_forever, args=(stop,), name=name, daemon=True)
    thread.start()
    return thread, stop
