"""Serving the jobs a worker took: generations through their model's decode loop (``inference.batching.scheduler``;
one loop per served model), tokenizing, inspecting and scoring on a thread of their own, each turned
into websocket events.

``playground.worker.consumer``'s ``InferenceWorker`` hands each job it takes to ``submit_generation`` or
``serve_quick_job`` with an ``emit`` callback, which receives the job's events and then ``END``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings

from inference.batching.scheduler import BatchStep, Scheduler, Slots, Ticket, serve_in_thread
from inference.call_stop import CancelFlag, stopping_when
from inference.decoding import generation
from inference.decoding.beam import BeamStep
from inference.decoding.whatif import LogitsCache, inspect_variants
from inference.errors import Cancelled, ParamError
from inference.model_catalog import CATALOG, model_dir_for
from inference.runtime import Runtime, load_runtime
from inference.speculative import DraftSources
from playground.runs.recording import RunRecorder
from playground.runs.request_fields import record_fields
from playground.wire import events
from playground.wire.jobs import Generate, Inspect, Job, Score, Tokenize
from playground.worker import prompt_scores
from playground.worker.outbox import flush_outboxes

log = logging.getLogger(__name__)

END = object()  # what ``emit`` receives after a job's last event


class ModelResources:
    """One served model in this process: its runtime (loaded on first use), its own decode loop on a
    thread of its own (so rows of different models never share a model call), its what-if cache."""

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.logits_cache = LogitsCache()
        self._runtime: Runtime | None = None
        self._scheduler: Scheduler | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory already (a run for it need not wait for the load)."""
        return self._runtime is not None

    def runtime(self) -> Runtime:
        """The model, loaded once, by whichever worker thread needs it first."""
        with self._lock:
            if self._runtime is None:
                config = settings.INFERENCE
                model_dir = model_dir_for(self.model_id, config["MODELS"])
                self._runtime = load_runtime(
                    model_dir,
                    config["EXECUTION_PROVIDERS"],
                    config["INTRA_OP_THREADS"],
                    self.model_id,
                    spinning=config["INTRA_OP_SPINNING"],
                )
                info = self._runtime.info
                log.info("inference worker serving %s (%s) on %s", info.id, info.name, info.execution_provider)
            return self._runtime

    def scheduler(self) -> Scheduler:
        """The model's decode loop, started on its own thread with the model (once)."""
        runtime = self.runtime()
        with self._lock:
            if self._scheduler is None:
                config = settings.INFERENCE
                self._scheduler = Scheduler(
                    runtime,
                    config["MAX_BATCH"],
                    config["PREFILL_CHUNK"],
                    drafts=self.drafts(runtime),
                    admission_window=config["ADMISSION_WINDOW_MS"] / 1000,
                    after_step=flush_outboxes,  # a step's events reach the event loops together
                )
                serve_in_thread(self._scheduler)
                log.info("decode loop of %s started: up to %d rows per step", self.model_id, self._scheduler.max_batch)
            return self._scheduler

    def started_scheduler(self) -> Scheduler | None:
        """The model's decode loop if it runs already (then nothing needs loading off the event loop)."""
        return self._scheduler

    def drafts(self, runtime: Runtime) -> DraftSources:
        """Speculative runs' draft sources: prompt lookup, and the draft models built beside the
        served model (``loop_params.DRAFT_MODELS``), each loaded when a run first names it."""
        config = settings.INFERENCE

        def load(model_dir: Path) -> Runtime:
            return load_runtime(model_dir, config["EXECUTION_PROVIDERS"], config["INTRA_OP_THREADS"], spinning=False)

        return DraftSources(runtime, model_dir_for(self.model_id, config["MODELS"]).parent, load)

    def load(self) -> dict[str, int] | None:
        """The decode loop's load, or None before it started."""
        return None if self._scheduler is None else self._scheduler.load()


class ProcessResources:
    """What one worker process owns: each served model's resources (made on first use, not at
    import) and one thread for tokenizing, inspecting and scoring, whatever the model."""

    def __init__(self) -> None:
        self.quick_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize")
        self._models: dict[str, ModelResources] = {}
        self._lock = threading.Lock()

    def served(self) -> list[str]:
        """The ids of the models this process serves, the default first."""
        return list(settings.INFERENCE["MODELS"])

    def model(self, model_id: str | None = None) -> ModelResources:
        """A served model's resources (None: the default model's)."""
        model_id = model_id or self.served()[0]
        with self._lock:
            if model_id not in self._models:
                if model_id not in self.served():
                    raise ParamError("model", f"this worker does not serve {model_id!r}; it serves {self.served()}")
                self._models[model_id] = ModelResources(model_id)
            return self._models[model_id]

    def runtime(self, model_id: str | None = None) -> Runtime:
        return self.model(model_id).runtime()

    def scheduler(self, model_id: str | None = None) -> Scheduler:
        return self.model(model_id).scheduler()

    def load(self) -> dict[str, int] | None:
        """Every started decode loop's load added up, or None before any started."""
        with self._lock:
            loads = [load for load in (m.load() for m in self._models.values()) if load is not None]
        if not loads:
            return None
        return {key: sum(load[key] for load in loads) for key in loads[0]}


@lru_cache(maxsize=1)
def resources() -> ProcessResources:
    return ProcessResources()


@dataclass
class Assignment:
    """A job this worker holds: who to answer, and the flag that cancels it."""

    request_id: str
    reply_channel: str
    command: Job  # parsed once, at the front door
    quick: bool  # tokenizing, inspecting or scoring: served on their own thread, never behind generations
    lease: str | None = None  # liveness: the connection's token for this submission, on every reply
    unheard: bool = False  # its front door closed, or its channel is full or gone: nothing more is sent to it
    cancelled: CancelFlag = field(default_factory=CancelFlag)  # also stops a decoder call in flight for it alone
    answered: bool = False  # its last event (``done``, ``error``) is on its way: the load no longer counts it

    @property
    def key(self) -> tuple[str, str]:
        return (self.reply_channel, self.request_id)


def serve_quick_job(job: Assignment, emit: Callable[[Any], None]) -> None:
    """Runs one job on a worker thread, emitting websocket events; never raises."""
    request_id = job.request_id
    try:
        if job.cancelled.is_set():
            raise Cancelled("cancelled before its turn")
        with stopping_when([job.cancelled]):  # a cancel stops its decoder call in flight (``Terminated``)
            _serve_quick(job, resources().model(job.command.model), emit)
    except ParamError as error:
        emit(events.param_error_event(error, request_id))
    except Cancelled:  # (``Terminated`` too)
        emit(events.not_started_event(request_id))
    except Exception as error:  # noqa: BLE001 — the client must hear about it, and the worker must go on
        log.exception("request %s failed", request_id)
        emit(events.error_event("generation_failed", f"the model failed during this request: {error}", None, request_id))
    finally:
        emit(END)


def _serve_quick(job: Assignment, served: ModelResources, emit: Callable[[Any], None]) -> None:
    """A tokenize, inspect or score job's answer."""
    request_id, command, model = job.request_id, job.command, served.runtime()
    if isinstance(command, Tokenize):
        ids = model.codec.encode(command.text, command.mode, command.system, command.chat)  # type: ignore[arg-type]
        emit(
            events.tokens_event(
                request_id, ids, model.codec, model.shape.context_window, command.offset, command.limit, model.info.id
            )
        )
    elif isinstance(command, Inspect):
        emit(_inspect(model, command, job.cancelled.is_set, served.logits_cache))
    elif isinstance(command, Score):
        emit(prompt_scores.answer(model, command, job.cancelled.is_set) | {"model": model.info.id})


async def submit_generation(
    job: Assignment,
    emit: Callable[[Any], None],
    emit_in_step: Callable[[Any], None] | None = None,
    process: ProcessResources | None = None,
) -> None:
    """Hands a generation to the decode loop (loading the model first if need be, off the event
    loop). ``emit_in_step``: how the decode loop emits the run's events (default ``emit``), e.g.
    into an outbox the loop flushes after each step. A run whose model is not in memory yet first
    says so (a ``loading`` event) and its ``done`` says how long it waited (``timing.load_ms``).
    ``process``: whose models (default: this process's ``resources()``)."""
    in_step = emit_in_step or emit
    try:
        served = (process or resources()).model(job.command.model)
        load_ms = None
        if not served.loaded:  # the first run of this model here, or one that came while it loads
            emit(events.loading_event(job.request_id, served.model_id, CATALOG[served.model_id].display_name))
            began = time.monotonic()
            await asyncio.to_thread(served.runtime)
            load_ms = (time.monotonic() - began) * 1000.0
        scheduler = served.started_scheduler() or await asyncio.to_thread(served.scheduler)
        listener = GenerationListener(job, served.runtime(), in_step, lambda: in_step(END), load_ms)
        scheduler.submit(listener.ticket())
    except ParamError as error:  # a model this worker does not serve
        emit(events.param_error_event(error, job.request_id))
        emit(END)
    except Exception as error:  # noqa: BLE001 — e.g. no model: the client must hear about it
        log.exception("request %s could not start", job.request_id)
        emit(events.error_event("generation_failed", f"the model failed during this request: {error}", None, job.request_id))
        emit(END)


class GenerationListener:
    """Turns what the decode loop delivers for one generation into websocket events. Every event
    also goes to the run's recorder, which saves the run when it ends (finished, cancelled, or
    failed after it started) and puts its id into ``done``. Called on the decode loop's thread."""

    def __init__(
        self,
        job: Assignment,
        model: Runtime,
        emit: Callable[[Any], None],
        ended: Callable[[], None],
        load_ms: float | None = None,
    ) -> None:
        assert isinstance(job.command, Generate)
        self.job = job
        self.command = job.command
        self.model = model
        self.emit = emit
        self.ended = ended  # after the last event
        self.load_ms = load_ms  # how long the run waited for its model to load (None: it was loaded)
        self.recorder = RunRecorder(job.request_id, record_fields(job.command))

    def ticket(self) -> Ticket:
        return Ticket(self.command.request, self.job.cancelled.is_set, self.deliver, self.fail, self.job.cancelled)

    def deliver(self, item: Any, info: Slots | BatchStep | None) -> None:
        request_id, codec = self.job.request_id, self.model.codec
        if isinstance(item, generation.Started):
            slots = info if isinstance(info, Slots) else None
            self.emit(self.recorder.observe(events.started_event(request_id, item, codec, self.model.info, slots)))
            if item.prompt_surprisal is not None:
                for page in events.prompt_surprisal_events(request_id, item.prompt_surprisal, codec):
                    self.emit(self.recorder.observe(page))
        elif isinstance(item, generation.TokenStep):
            batch = info if isinstance(info, BatchStep) else None
            speculative = self.command.request.speculative is not None
            self.emit(self.recorder.observe(events.token_event(request_id, item, codec, batch, speculative)))
        elif isinstance(item, generation.Verification):
            self.emit(self.recorder.observe(events.verification_event(request_id, item, codec)))
        elif isinstance(item, BeamStep):
            self.emit(self.recorder.observe(events.beam_step_event(request_id, item, codec)))
        else:
            self.emit(self.recorder.finish(events.done_event(request_id, item, self.load_ms)))
            self.ended()

    def fail(self, error: BaseException) -> None:
        request_id = self.job.request_id
        if isinstance(error, Cancelled):  # before ``started``: nothing to save
            self.emit(events.not_started_event(request_id))
        elif isinstance(error, ParamError):
            failure = events.param_error_event(error, request_id)
            self.emit(_with_run_id(failure, self.recorder.fail(failure)))  # saves what a run that failed midway made
        else:
            log.error("generation %s failed: %s", request_id, error, exc_info=error)
            failure = events.error_event("generation_failed", f"the model failed during this run: {error}", None, request_id)
            self.emit(_with_run_id(failure, self.recorder.fail(failure)))
        self.ended()


def _with_run_id(event: dict[str, Any], run_id: str | None) -> dict[str, Any]:
    """An error of a run that was saved (it had started) names the saved run."""
    return event if run_id is None else event | {"run_id": run_id}


def _inspect(model: Runtime, command: Inspect, is_cancelled: Callable[[], bool], cache: LogitsCache) -> dict[str, Any]:
    """The distribution at one position under each setting asked for, from the real logits."""
    prompt_ids = model.codec.encode(command.prompt, command.mode, command.system, command.chat)  # type: ignore[arg-type]
    for _, loop in command.variants:  # its max_tokens checked as a generate's is, after the same prompt
        loop.check_context(len(prompt_ids), model.shape.context_window)
    results = inspect_variants(model, prompt_ids, command.prefix_tokens, command.variants, command.top_n, cache, is_cancelled)
    return events.inspection_event(command.request_id, len(command.prefix_tokens), results, model.codec) | {
        "model": model.info.id
    }
