"""Continuous batching: many runs decoded as one ONNX Runtime batch per step, joining and leaving
between steps.

The ``Scheduler`` holds ``max_batch`` rows (*slots*) of one key/value cache. A run (a
``generation`` program: sampling or beam search) holds as many slots as it has rows (``n``
samples, ``num_beams`` beams) from the moment it is admitted until it ends; a run that ends frees
its slots at once and the next run reuses them.

The scheduler decides nothing itself and runs no decoder call: ``inference.batching.plan``'s
``Planner`` plans each step from plain states, and ``inference.batching.runner``'s ``BatchRunner``
executes the plan against the decoder and the cache. Each iteration of ``step``:

1. takes new tickets in (each gets its program at once: a request that cannot make one fails
   there);
2. asks for the intake plan and applies it: cancelled tickets and runs leave (a run still
   prefilling ends with ``Cancelled``, nothing started; a decoding one finishes as cancelled), a
   run wider than the batch is refused, and waiting runs are admitted to the slots it names (their
   prompts are encoded then);
3. asks for the step's plan (which runs decode together, which step alone, which prompts prefill
   which tokens) and has the runner execute it; a run whose prompt is now in the cache has
   started. A cancel that lands during the step stops each decoder call whose runs are all
   cancelled (a ticket's ``cancel`` flag, ``inference.call_stop``; a draft model's calls too), and
   those runs leave at the next intake with what they had made before it;
4. hands each run the logits of its rows and passes its tokens on; a run that has ended delivers
   its summary and leaves.

A speculative run (``speculative`` set) has its drafts made before each step's plan (prompt lookup,
or a draft model with its decoder state beside the batch, from ``DraftSources``); with drafts its
step is a ``Verify`` of their own while the other runs decode, and once its program has judged
them the run is rolled back past the rejected ones (``BatchRun.keep``); with none (nothing to look
up, or speculation switched off for low acceptance) it decodes with the others.

Every run keeps its own program (sampler chains, seeds, random generators, stop strings,
penalty histories, traces): the scheduler only moves logits and tokens. Runs without a KV cache,
and every run when the cache does not live in host memory (row views of the buffers need it), are
*solo*: each has a decoder state of its own and gets one step per iteration beside the batch.

Exactness: a row's logits in a batch equal the same sequence decoded alone up to the batch
arithmetic's float rounding (measured in tests/inference/batching/test_scheduler.py; docs/websocket-api.md
gives the figures), so greedy runs give the same tokens and seeded runs the same draws, except
where two candidates are tied to within that rounding.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from inference.batching.params import (
    ADMISSION_WINDOW_S,
    ADMISSION_WINDOWS_AT_MOST,
    DEFAULT_MAX_BATCH,
    PREFILL_CHUNK_BESIDE_DECODE,
)
from inference.batching.plan import Departure, Intake, Planner, WaitingState
from inference.batching.runner import BatchRun, BatchRunner, stopping_for
from inference.call_stop import CancelFlag, Terminated
from inference.decoding.beam import BeamStep
from inference.decoding.generation import (
    Finished,
    Generation,
    GenerationRequest,
    Program,
    SoloDriver,
    Started,
    TokenStep,
    Verification,
    new_program,
)
from inference.errors import Cancelled, ParamError
from inference.prefill import PREFILL_CHUNK
from inference.runtime import Runtime
from inference.speculative import DraftSources

log = logging.getLogger(__name__)


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


Item = Started | Verification | TokenStep | BeamStep | Finished


@dataclass
class Ticket:
    """A run handed to the scheduler, and where its results go. ``deliver`` gets ``Started`` (with
    its ``Slots``), each ``TokenStep``/``BeamStep`` (with the ``BatchStep``), then ``Finished``
    (with None); ``fail`` gets the exception that ended it otherwise (``Cancelled`` before it
    started, ``ParamError``, or any failure). Both are called on the scheduler's thread; after
    ``Finished`` or ``fail`` the ticket is over. A speculative run's ``Verification`` comes before the
    ``TokenStep``s of its step. ``cancel``, when given, is the flag ``is_cancelled`` reads: then a
    decoder call for this run alone (or for it and other cancelled runs) stops mid-way when it rises
    (``inference.call_stop``); without it, a cancel is seen between calls."""

    request: GenerationRequest
    is_cancelled: Callable[[], bool]
    deliver: Callable[[Item, Slots | BatchStep | None], None]
    fail: Callable[[BaseException], None]
    cancel: CancelFlag | None = None


class Scheduler:
    """Decodes many runs as one batch per step; see the module's docstring. ``submit`` may be
    called from any thread; ``step`` and ``serve_forever`` run on one thread of their own."""

    def __init__(
        self,
        runtime: Runtime,
        max_batch: int = DEFAULT_MAX_BATCH,
        prefill_chunk: int = PREFILL_CHUNK_BESIDE_DECODE,
        full_prefill_chunk: int = PREFILL_CHUNK,
        drafts: DraftSources | None = None,
        admission_window: float = ADMISSION_WINDOW_S,
        after_step: Callable[[], None] | None = None,
    ) -> None:
        """``drafts`` makes speculative runs' draft sources (default: prompt lookup only);
        ``admission_window`` (seconds) how long ``serve_forever``, woken from idle, waits for the
        next of a burst of tickets (``_gather``; 0: not at all); ``after_step`` is called on the
        scheduler's thread after each of ``serve_forever``'s iterations, once the step has
        delivered everything (a listener that buffers its tickets' items sends them on then)."""
        if admission_window < 0:
            raise ValueError(f"admission_window must be 0 or more seconds, got {admission_window}")
        self.planner = Planner(max_batch, prefill_chunk, full_prefill_chunk)  # checks the numbers
        self.admission_window = admission_window
        self.after_step = after_step
        self.runtime = runtime
        self.drafts = drafts or DraftSources()
        self.max_batch = max_batch
        self.runner = BatchRunner(runtime, max_batch)
        self.steps = 0  # decode steps so far: ``BatchStep.step``
        self._intake: queue.SimpleQueue[Ticket] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._ids = itertools.count()
        self._waiting: dict[int, tuple[Ticket, Program]] = {}  # in arrival order
        self._runs: dict[int, BatchRun] = {}  # admitted, in arrival order
        self._tickets: dict[int, Ticket] = {}  # each admitted run's

    # -- any thread

    def submit(self, ticket: Ticket) -> None:
        self._intake.put(ticket)
        self._wake.set()

    def load(self) -> dict[str, int]:
        """What the worker's ping reports: runs decoding, slots in use, runs waiting or prefilling."""
        runs = tuple(self._runs.values())
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
                busy = True
            finally:
                if self.after_step is not None:
                    self.after_step()
            if not busy and self._wake.wait(0.5):
                self._wake.clear()
                self._gather()

    def _gather(self) -> None:
        """Woken from idle by a ticket: waits while more keep arriving (each within
        ``admission_window`` of the last, ``ADMISSION_WINDOWS_AT_MOST`` windows in all, until the
        batch's rows are spoken for), so a burst is admitted in one step and its fresh prompts
        prefill together (``plan.FreshGroup``) rather than the first alone and the rest after it."""
        if self.admission_window <= 0:
            return
        deadline = time.perf_counter() + self.admission_window * ADMISSION_WINDOWS_AT_MOST
        while self._intake.qsize() < self.max_batch:
            wait = min(self.admission_window, deadline - time.perf_counter())
            if wait <= 0 or not self._wake.wait(wait):
                return
            self._wake.clear()

    def _abandon(self, error: BaseException) -> None:
        for run in list(self._runs.values()):
            ticket = self._tickets[run.id]
            self._release(run)
            try:
                ticket.fail(error)
            except Exception:  # noqa: BLE001
                log.exception("could not tell a run that it failed")

    def idle(self) -> bool:
        return not self._runs and not self._waiting and self._intake.empty()

    def step(self) -> bool:
        """One iteration (see the module's docstring); returns whether there was anything to do."""
        self._take_in()
        waiting = [WaitingState(i, program.rows, ticket.is_cancelled()) for i, (ticket, program) in self._waiting.items()]
        runs = [run.state(self._tickets[run.id].is_cancelled()) for run in self._runs.values()]
        self._apply(self.planner.intake(waiting, runs))
        if not self._runs:
            self.runner.release_memory()
            return bool(self._waiting)
        self._draft()
        plan = self.planner.step([run.state() for run in self._runs.values()])
        outcome = self.runner.execute(plan, self._runs)
        for run, error in outcome.failed:
            self._end(run, error)
        for run in outcome.prefilled:
            if run.id in self._runs:
                self._started(run)
        self._advance()
        return True

    def _take_in(self) -> None:
        """New tickets wait in line with their programs; a request that cannot make one fails alone."""
        while True:
            try:
                ticket = self._intake.get_nowait()
            except queue.Empty:
                return
            try:
                program = new_program(self.runtime, ticket.request, self.drafts)
            except Exception as error:  # noqa: BLE001 — a bad request ends alone
                ticket.fail(error)
                continue
            self._waiting[next(self._ids)] = (ticket, program)

    def _apply(self, intake: Intake) -> None:
        """Departures, then admissions: waiting tickets become runs on the slots planned for them."""
        for leave in intake.leave:
            if leave.id in self._runs:
                run = self._runs[leave.id]
                if leave.why is Departure.CANCELLED:
                    run.program.cancel()
                    self._finish(run)
                else:
                    self._end(run, Cancelled(leave.why.value))
                continue
            ticket, program = self._waiting.pop(leave.id)
            if leave.why is Departure.TOO_WIDE:
                field_name = "num_beams" if ticket.request.loop.num_beams > 1 else "n"
                message = f"{field_name} = {program.rows} needs {program.rows} rows; this worker decodes at most {self.max_batch}"
                ticket.fail(ParamError(field_name, message))
            else:
                ticket.fail(Cancelled(leave.why.value))
        for admit in intake.admit:
            ticket, program = self._waiting.pop(admit.id)
            try:
                prompt = program.prepare()
            except Exception as error:  # noqa: BLE001 — e.g. a prompt longer than the context: it ends alone
                ticket.fail(error)
                continue
            run = BatchRun(admit.id, program, list(admit.slots), prompt, cancel=ticket.cancel)
            if not self.runner.batched or not ticket.request.use_cache:
                run.solo = SoloDriver(self.runtime, program)
            self._runs[run.id] = run
            self._tickets[run.id] = ticket

    def _draft(self) -> None:
        """Each decoding speculative run drafts its tokens for this step (none: it decodes plainly);
        a draft source that fails ends its run alone."""
        for run in list(self._runs.values()):
            program = run.program
            if run.prefilling or not isinstance(program, Generation) or not program.speculating:
                continue
            try:
                with stopping_for([run]):  # a draft model's calls stop when the run is cancelled
                    draft = program.draft()
            except Terminated:  # cancelled while drafting: it ends as cancelled, with what it made
                program.cancel()
                self._finish(run)
                continue
            except Exception as error:  # noqa: BLE001
                self._end(run, error)
                continue
            run.draft = draft if draft.tokens else None

    def _started(self, run: BatchRun) -> None:
        """``run``'s prompt is in the cache: it has started, unless it was cancelled meanwhile."""
        ticket = self._tickets[run.id]
        try:
            if ticket.is_cancelled():
                raise Cancelled("cancelled during the prefill")
            ticket.deliver(run.program.started(), Slots(tuple(run.slots), self.max_batch))
        except Exception as error:  # noqa: BLE001 — it ends alone
            self._end(run, error)

    def _advance(self) -> None:
        """Every run with logits takes its tokens; this is one step of the batch."""
        ready = [run for run in self._runs.values() if run.logits is not None]
        if not ready:
            return
        self.steps += 1
        info = BatchStep(self.steps, sum(run.active for run in ready), len(ready))
        for run in ready:
            logits, run.logits = run.logits, None
            try:
                items = self._take(run, logits)
            except Exception as error:  # noqa: BLE001 — e.g. a sampler stage refusing these logits
                self._end(run, error)
                continue
            ticket = self._tickets[run.id]
            for item in items:
                ticket.deliver(item, info)
            if run.program.is_done():
                self._finish(run)

    @staticmethod
    def _take(run: BatchRun, logits: np.ndarray) -> list[Item]:
        """The run's tokens from its logits: a plain step's, or a verified draft's (then rolled back)."""
        if run.draft is None:
            return list(run.program.advance(logits, run.began))
        assert isinstance(run.program, Generation)
        verification, steps = run.program.verify(logits, run.draft, run.began)  # logits [m + 1, V]
        run.keep(verification.accepted)
        return [verification, *steps]

    def _finish(self, run: BatchRun) -> None:
        ticket = self._release(run)
        ticket.deliver(run.program.finish(), None)

    def _end(self, run: BatchRun, error: BaseException) -> None:
        if run.id in self._runs:
            self._release(run).fail(error)

    def _release(self, run: BatchRun) -> Ticket:
        """The run leaves: its slots are free for the next run at once."""
        del self._runs[run.id]
        return self._tickets.pop(run.id)


def serve_in_thread(scheduler: Scheduler, name: str = "decode") -> tuple[threading.Thread, threading.Event]:
    """Starts ``scheduler.serve_forever`` on a daemon thread; returns it and the event that stops it."""
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.serve_forever, args=(stop,), name=name, daemon=True)
    thread.start()
    return thread, stop
