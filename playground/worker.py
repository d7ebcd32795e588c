"""The inference worker: serves generation requests arriving on the ``inference`` channel.

The websocket consumer and the worker speak only through the channel layer, in the five messages
documented and made in ``playground.channel_messages``.

Liveness (``playground.liveness``): each request carries its connection's ``lease`` token, which
the worker repeats on every message about it, and a worker holding requests sends their
connections an ``inference.heartbeat``, so a connection notices a worker that died.

Embedded default: the worker runs inside the server process on the in-memory channel layer,
started on the first websocket connection. Scale-out: point ``CHANNEL_LAYERS`` at Redis and run
``python manage.py runworker inference`` on other machines; the consumer does not change.

Continuous batching (``inference.batching``): each worker process runs one decode loop, the
``Scheduler``, on a thread of its own, so the event loop never blocks. Up to ``MAX_BATCH`` rows
(``PLAYGROUND_MAX_BATCH``) decode as one batch per step; generations join between steps, leave
when they end, and a long prompt is prefilled in chunks between the others' steps. The loop checks
each request's cancel flag before every token and between prefill chunks; a request still waiting
for rows leaves unrun when cancelled (or when its socket closes). Tokenizing and inspecting have
a thread of their own and never wait behind generations.

Capacity-aware intake (``IntakeWorker``): a worker reads the shared ``inference`` channel only
while it holds fewer than ``MAX_BATCH + INTAKE_BACKLOG`` generations, so with several workers on
one Redis a request waits in the channel until some worker has room and goes to that one, rather
than queueing behind a busy worker while another is idle. The worker's own channel (cancels), the
workers' group and the ``inference-quick`` channel (tokenizing, inspecting, scoring: no decode slot
needed) are read all the time, so a quick job never waits behind generations; ``IntakeWorker``
adds that channel itself wherever it serves ``inference``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from weakref import WeakKeyDictionary

from channels.consumer import AsyncConsumer
from channels.layers import get_channel_layer
from channels.routing import ChannelNameRouter
from channels.worker import Worker
from django.conf import settings

from inference import generation
from inference.batching import BatchStep, Scheduler, Slots, Ticket, serve_in_thread
from inference.beam import BeamStep
from inference.errors import Cancelled, ParamError
from inference.model_dir import default_model_dir
from inference.runtime import Runtime, load_runtime
from inference.whatif import LogitsCache, inspect_position
from playground import channel_messages as messages
from playground import events, frames, health, prompt_scores, waiting_line
from playground.liveness import WorkerHeartbeat

log = logging.getLogger(__name__)

INFERENCE_CHANNEL = messages.INFERENCE_CHANNEL
QUICK_CHANNEL = messages.QUICK_CHANNEL  # read all the time, whatever the worker's load
WORKERS_GROUP = "inference-workers"  # every worker instance: cancels for requests not yet taken
_END = object()


class ProcessResources:
    """What one worker process owns: the model (loaded on first use), the decode loop on a thread
    of its own, a thread for tokenizing and inspecting, and the what-if logits cache. Made on first
    use, not at import."""

    def __init__(self) -> None:
        self.quick_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize")
        self.logits_cache = LogitsCache()
        self._runtime: Runtime | None = None
        self._scheduler: Scheduler | None = None
        self._lock = threading.Lock()

    def scheduler(self) -> Scheduler:
        """The process's decode loop, started on its own thread with the model (once)."""
        runtime = self.runtime()
        with self._lock:
            if self._scheduler is None:
                config = settings.INFERENCE
                self._scheduler = Scheduler(runtime, config["MAX_BATCH"], config["PREFILL_CHUNK"])
                serve_in_thread(self._scheduler)
                log.info("decode loop started: up to %d rows per step", self._scheduler.max_batch)
            return self._scheduler

    def load(self) -> dict[str, int] | None:
        """The decode loop's load, or None before it started."""
        return None if self._scheduler is None else self._scheduler.load()

    def runtime(self) -> Runtime:
        """The process's model, loaded once, by whichever worker thread needs it first."""
        with self._lock:
            if self._runtime is None:
                config = settings.INFERENCE
                self._runtime = load_runtime(default_model_dir(), config["EXECUTION_PROVIDERS"], config["INTRA_OP_THREADS"])
                info = self._runtime.info
                log.info("inference worker serving %s on %s", info.name, info.execution_provider)
            return self._runtime


@lru_cache(maxsize=1)
def resources() -> ProcessResources:
    return ProcessResources()


@dataclass
class Assignment:
    """A job this worker holds: who to answer, and the flag that cancels it."""

    request_id: str
    reply_channel: str
    command: frames.Job  # parsed once, at the consumer
    quick: bool  # tokenizing, inspecting or scoring: served on their own thread, never behind generations
    lease: str | None = None  # liveness: the connection's token for this submission, on every reply
    cancelled: threading.Event = field(default_factory=threading.Event)

    @property
    def key(self) -> tuple[str, str]:
        return (self.reply_channel, self.request_id)


class InferenceWorker(AsyncConsumer):
    """Takes requests off the ``inference`` channel and streams their events back.

    Generations go to the process's decode loop, which admits them in arrival order as rows free;
    a cancel raises the request's flag, which the loop sees before the request's next token (one
    still waiting leaves unrun: its answer is an ``error`` of code ``cancelled``, nothing is saved).
    """

    EARLY_CANCELS_KEPT = 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.jobs: dict[tuple[str, str], Assignment] = {}  # every request this worker holds, waiting or running
        # Cancels that arrived before their request (a consumer that closed before any worker took
        # its request): (reply_channel, request_id), oldest first.
        self.early_cancels: OrderedDict[tuple[str, str], None] = OrderedDict()
        self.heartbeat = WorkerHeartbeat(self.jobs.values)  # liveness: while it holds any job

    async def inference_ping(self, message: dict[str, Any]) -> None:
        await health.answer_ping(self, message)  # readiness: who answers, its model, its load

    def load(self) -> dict[str, int]:
        """The ping's ``load``: requests decoding, rows in use, requests taken but not decoding yet."""
        generations = sum(1 for job in self.jobs.values() if not job.quick)
        loop_load = resources().load() or {"running": 0, "rows": 0}
        running = min(loop_load["running"], generations)
        return {
            "running": running,
            "rows": loop_load["rows"],
            "waiting": generations - running,
            "max_batch": settings.INFERENCE["MAX_BATCH"],
        }

    async def inference_request(self, message: dict[str, Any]) -> None:
        """Takes a request on and tells the consumer where to send cancels."""
        key = (message["reply_channel"], message["request_id"])
        try:
            command = frames.job_from_dict(message["job"])
            quick = messages.is_quick(command)
            job = Assignment(message["request_id"], message["reply_channel"], command, quick, message.get("lease"))
            await self.channel_layer.group_add(WORKERS_GROUP, self.channel_name)  # (again: Redis groups expire)
            if job.key in self.early_cancels:
                del self.early_cancels[job.key]  # its connection closed before any worker took it
                return
            self.jobs[job.key] = job
            self.heartbeat.ensure_running(self.channel_layer, self.channel_name)  # liveness
            log.info("took request %s", job.request_id)  # which worker serves what, in its log lines
            await self.channel_layer.send(job.reply_channel, messages.queued(job.request_id, self.channel_name, job.lease))
            asyncio.ensure_future(self._serve(job))
        finally:
            if key not in self.jobs:
                intake_gate().release(key)

    async def inference_cancel(self, message: dict[str, Any]) -> None:
        """Raises a request's cancel flag: the decode loop sees it before the request's next token
        or prefill chunk, or when it would admit it."""
        key = (message["reply_channel"], message["request_id"])
        job = self.jobs.get(key)
        if job is None:
            self.early_cancels[key] = None
            while len(self.early_cancels) > self.EARLY_CANCELS_KEPT:
                self.early_cancels.popitem(last=False)
            return
        job.cancelled.set()

    async def _serve(self, job: Assignment) -> None:
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Any] = asyncio.Queue()

        def emit(event: Any) -> None:
            try:
                loop.call_soon_threadsafe(events.put_nowait, event)
            except RuntimeError:  # the event loop has closed (shutdown): nobody is listening
                job.cancelled.set()

        if job.quick:
            working: asyncio.Future[Any] = loop.run_in_executor(resources().quick_thread, _serve_job, job, emit)
        else:
            working = asyncio.ensure_future(_submit_generation(job, emit))
        try:
            while (event := await events.get()) is not _END:
                await self.channel_layer.send(
                    job.reply_channel, messages.event(job.request_id, event, job.lease, self.channel_name)
                )
            await self.channel_layer.send(job.reply_channel, messages.finished(job.request_id, job.lease, self.channel_name))
        except Exception:  # noqa: BLE001 — e.g. the consumer's channel is full or Redis is gone
            log.warning("could not pass on the events of request %s; cancelling it", job.request_id, exc_info=True)
            job.cancelled.set()  # nobody hears this run any more: stop it within one token
        finally:
            if self.jobs.get(job.key) is job:  # (a resubmission may hold the key now)
                del self.jobs[job.key]
            intake_gate().release(job.key)
            await asyncio.shield(working)


def _serve_job(job: Assignment, emit: Callable[[Any], None]) -> None:
    """Runs one job on a worker thread, emitting websocket events; never raises."""
    request_id = job.request_id
    try:
        if job.cancelled.is_set():
            raise Cancelled("cancelled before its turn")
        command = job.command
        model = resources().runtime()
        if isinstance(command, frames.Tokenize):
            ids = model.codec.encode(command.text, command.mode, command.system, command.chat)  # type: ignore[arg-type]
            emit(events.tokens_event(request_id, ids, model.codec, model.shape.context_window, command.offset, command.limit))
        elif isinstance(command, frames.Inspect):
            emit(_inspect(model, command, job.cancelled.is_set))
        elif isinstance(command, frames.Score):
            emit(prompt_scores.answer(model, command, job.cancelled.is_set))
    except ParamError as error:
        emit(events.param_error_event(error, request_id))
    except Cancelled:
        emit(events.not_started_event(request_id))
    except Exception as error:  # noqa: BLE001 — the client must hear about it, and the worker must go on
        log.exception("request %s failed", request_id)
        emit(events.error_event("generation_failed", f"the model failed during this request: {error}", None, request_id))
    finally:
        emit(_END)


async def _submit_generation(job: Assignment, emit: Callable[[Any], None]) -> None:
    """Hands a generation to the decode loop (loading the model first if need be, off the event loop)."""
    try:
        scheduler = await asyncio.to_thread(resources().scheduler)
        scheduler.submit(GenerationListener(job, resources().runtime(), emit, lambda: emit(_END)).ticket())
    except Exception as error:  # noqa: BLE001 — e.g. no model: the client must hear about it
        log.exception("request %s could not start", job.request_id)
        emit(events.error_event("generation_failed", f"the model failed during this request: {error}", None, job.request_id))
        emit(_END)


class GenerationListener:
    """Turns what the decode loop delivers for one generation into websocket events. Every event
    also goes to the run's recorder, which saves the run when it ends (finished, cancelled, or
    failed after it started) and puts its id into ``done``. Called on the decode loop's thread."""

    def __init__(self, job: Assignment, model: Runtime, emit: Callable[[Any], None], ended: Callable[[], None]) -> None:
        from playground.runs.recording import RunRecorder  # the app registry is ready by now

        assert isinstance(job.command, frames.Generate)
        self.job = job
        self.command = job.command
        self.model = model
        self.emit = emit
        self.ended = ended  # after the last event
        self.recorder = RunRecorder(job.request_id, frames.record_fields(job.command))

    def ticket(self) -> Ticket:
        return Ticket(self.command.request, self.job.cancelled.is_set, self.deliver, self.fail)

    def deliver(self, item: Any, info: Slots | BatchStep | None) -> None:
        request_id, codec = self.job.request_id, self.model.codec
        if isinstance(item, generation.Started):
            slots = info if isinstance(info, Slots) else None
            self.emit(self.recorder.observe(events.started_event(request_id, item, codec, self.model.info, slots)))
        elif isinstance(item, generation.TokenStep):
            batch = info if isinstance(info, BatchStep) else None
            self.emit(self.recorder.observe(events.token_event(request_id, item, codec, batch)))
        elif isinstance(item, BeamStep):
            self.emit(self.recorder.observe(events.beam_step_event(request_id, item, codec)))
        else:
            self.emit(self.recorder.finish(events.done_event(request_id, item)))
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


def _generate(model: Runtime, command: frames.Generate, job: Assignment, emit: Callable[[Any], None]) -> None:
    """Serves one generation on this thread, alone, through a decode loop of its own: the worker's
    own path (listener, recorder, scheduler) without the channel layer, for tests and tools."""
    scheduler = Scheduler(model, max_batch=max(command.request.loop.n, command.request.loop.num_beams))
    scheduler.submit(GenerationListener(job, model, emit, lambda: None).ticket())
    while not scheduler.idle():
        scheduler.step()


def _with_run_id(event: dict[str, Any], run_id: str | None) -> dict[str, Any]:
    """An error of a run that was saved (it had started) names the saved run."""
    return event if run_id is None else event | {"run_id": run_id}


def _inspect(model: Runtime, command: frames.Inspect, is_cancelled: Callable[[], bool]) -> dict[str, Any]:
    """The distribution at one position under each setting asked for, from the real logits."""
    prompt_ids = model.codec.encode(command.prompt, command.mode, command.system, command.chat)  # type: ignore[arg-type]
    prefix = list(command.prefix_tokens)
    ids = prompt_ids + prefix
    if len(ids) > model.shape.context_window:
        raise ParamError(
            "prefix_tokens",
            f"the prompt and prefix_tokens are {len(ids)} tokens; the context window is {model.shape.context_window}",
            code="prompt_too_long",
        )
    generation.check_prefix(command.prefix_tokens, model.shape.vocab_size)
    for sampling, _ in command.variants:
        sampling.validate_for_vocab(model.shape.vocab_size)
    logits = resources().logits_cache.logits(model, prompt_ids, prefix, is_cancelled)
    results = []
    for sampling, loop in command.variants:
        history = ids if loop.penalize_prompt else prefix
        # as in a run: before min_tokens new tokens, the end-of-sequence tokens are ruled out
        seen = logits if len(prefix) >= loop.min_tokens else generation.without_tokens(logits, model.codec.eos_ids)
        results += inspect_position(seen, history, [sampling], model.codec.token_texts(), command.top_n, generated=prefix)
    return events.inspection_event(command.request_id, len(prefix), results, model.codec)


class IntakeGate:
    """How many generations this worker holds, against the room it has: ``MAX_BATCH`` rows decoding
    plus ``INTAKE_BACKLOG`` taken in advance. The intake waits for room before it reads the shared
    channel."""

    def __init__(self) -> None:
        self.held: set[tuple[str, str]] = set()
        self._changed = asyncio.Event()
        self.freeing = waiting_line.FreeingRate()  # the line's pace, told to waiting connections
        self.name = secrets.token_hex(6)  # names this worker's rate in the line's messages

    def take(self, message: dict[str, Any]) -> None:
        if message.get("type") == "inference.request":
            self.held.add((message["reply_channel"], message["request_id"]))

    def release(self, key: tuple[str, str]) -> None:
        if key in self.held:
            self.held.discard(key)
            self.freeing.freed()
        self._changed.set()

    @property
    def room(self) -> int:
        config = settings.INFERENCE
        return int(config["MAX_BATCH"]) + int(config["INTAKE_BACKLOG"])

    async def wait_for_room(self) -> None:
        while len(self.held) >= self.room:
            self._changed.clear()
            await self._changed.wait()


_gates: WeakKeyDictionary[asyncio.AbstractEventLoop, IntakeGate] = WeakKeyDictionary()


def intake_gate() -> IntakeGate:
    """This event loop's gate (one worker per process, or per test's event loop)."""
    loop = asyncio.get_running_loop()
    gate = _gates.get(loop)
    if gate is None:
        gate = _gates[loop] = IntakeGate()
    return gate


class IntakeWorker(Worker):
    """channels' ``Worker`` that reads the shared ``inference`` channel only while this worker has
    room (``IntakeGate``), and the ``inference-quick`` channel all the time, into the same
    application instance; ``manage.py runworker`` and the embedded worker both run it."""

    def __init__(self, application: Any, channels: list[str], channel_layer: Any, **kwargs: Any) -> None:
        channels = list(channels)
        if INFERENCE_CHANNEL in channels and QUICK_CHANNEL not in channels:
            channels.append(QUICK_CHANNEL)  # so `runworker inference` serves quick jobs too
        super().__init__(application, channels, channel_layer, **kwargs)

    async def listener(self, channel: str) -> None:
        gate = intake_gate()
        # quick jobs go to the inference channel's instance: one worker, one set of held jobs
        served = INFERENCE_CHANNEL if channel == QUICK_CHANNEL else channel
        while True:
            if channel == INFERENCE_CHANNEL:
                await gate.wait_for_room()
            message = await self.channel_layer.receive(channel)
            if not message.get("type", None):
                raise ValueError("Worker received message with no type.")
            if channel == INFERENCE_CHANNEL:
                if not message.get("quick"):
                    gate.take(message)
                await self._announce_taken(message, gate)  # the line moved (a request, ping or cancel left it)
            instance_queue = self.get_or_create_application_instance(served, {"type": "channel", "channel": served})
            await instance_queue.put(message)

    async def _announce_taken(self, message: dict[str, Any], gate: IntakeGate) -> None:
        taken = waiting_line.taken(message.get("ticket"), gate.freeing.per_second(), gate.name)
        try:
            await self.channel_layer.group_send(waiting_line.LINE_GROUP, taken)
        except Exception as error:  # noqa: BLE001 — the line's positions are a courtesy; serving goes on
            log.warning("could not tell the waiting line: %s", error)


_embedded: WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Future[Any]] = WeakKeyDictionary()


def ensure_embedded_worker() -> None:
    """Starts an in-process worker on this event loop once, when settings ask for one."""
    if not settings.INFERENCE.get("EMBEDDED_WORKER", True):
        return
    loop = asyncio.get_running_loop()
    running = _embedded.get(loop)
    if running is not None and not running.done():
        return
    worker = IntakeWorker(
        application=ChannelNameRouter({INFERENCE_CHANNEL: InferenceWorker.as_asgi()}),
        channels=[INFERENCE_CHANNEL],
        channel_layer=get_channel_layer(),
    )
    _embedded[loop] = asyncio.ensure_future(worker.arun())
    log.info("embedded inference worker started")
