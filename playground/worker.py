"""The inference worker: serves generation requests arriving on the ``inference`` channel.

The websocket consumer and the worker speak only through the channel layer, in the five messages
documented and made in ``playground.channel_messages``.

Liveness (``playground.liveness``): each request carries its connection's ``lease`` token, which
the worker repeats on every message about it, and a worker holding requests sends their
connections an ``inference.heartbeat``, so a connection notices a worker that died.

Embedded default: the worker runs inside the server process on the in-memory channel layer,
started on the first websocket connection. Scale-out: point ``CHANNEL_LAYERS`` at Redis and run
``python manage.py runworker inference`` on other machines; the consumer does not change.

Each worker process decodes one request at a time on one thread of its own, so the event loop
never blocks; the thread checks the request's cancel flag before every token and between prefill
chunks. Requests waiting for the decoder sit in the worker's queue, where a cancel (or the closing
of their socket) removes them without running them. Tokenizing, which
needs no decoder, has a thread of its own and never waits behind a generation.
"""

from __future__ import annotations

import asyncio
import logging
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
from inference.beam import BeamStep
from inference.errors import Cancelled, ParamError
from inference.model_dir import default_model_dir
from inference.runtime import Runtime, load_runtime
from inference.whatif import LogitsCache, inspect_position
from playground import channel_messages as messages
from playground import events, frames, health
from playground.liveness import WorkerHeartbeat

log = logging.getLogger(__name__)

INFERENCE_CHANNEL = "inference"
WORKERS_GROUP = "inference-workers"  # every worker instance: cancels for requests not yet taken
_END = object()


class ProcessResources:
    """What one worker process owns: the model (loaded on first use), the decode thread, a thread
    for tokenizing, and the what-if logits cache. Made on first use, not at import."""

    def __init__(self) -> None:
        self.decode_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decode")
        self.quick_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize")
        self.logits_cache = LogitsCache()
        self._runtime: Runtime | None = None
        self._lock = threading.Lock()

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
    quick: bool  # tokenizing: no decoder needed, so it never waits behind a generation
    lease: str | None = None  # liveness: the connection's token for this submission, on every reply
    cancelled: threading.Event = field(default_factory=threading.Event)

    @property
    def key(self) -> tuple[str, str]:
        return (self.reply_channel, self.request_id)


class InferenceWorker(AsyncConsumer):
    """Takes requests off the ``inference`` channel and streams their events back.

    Requests that need the decoder wait in this worker's own queue, in arrival order, and go to the
    decode thread one at a time; a cancel for a request still waiting takes it out of the queue at
    once (it never runs, nothing is saved, its answer is an ``error`` of code ``cancelled``).
    """

    EARLY_CANCELS_KEPT = 1024
    inference_ping = health.answer_ping  # readiness: who answers, and whether its model is built

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.jobs: dict[tuple[str, str], Assignment] = {}  # every request this worker holds, waiting or running
        self.waiting: OrderedDict[tuple[str, str], Assignment] = OrderedDict()  # decoder requests not yet begun
        self._decoding: asyncio.Future[Any] | None = None  # the task feeding ``waiting`` to the decode thread
        # Cancels that arrived before their request (a consumer that closed before any worker took
        # its request): (reply_channel, request_id), oldest first.
        self.early_cancels: OrderedDict[tuple[str, str], None] = OrderedDict()
        self.heartbeat = WorkerHeartbeat(self.jobs.values)  # liveness: while it holds any job

    async def inference_request(self, message: dict[str, Any]) -> None:
        """Queues a request and tells the consumer where to send cancels."""
        job = Assignment(
            message["request_id"],
            message["reply_channel"],
            frames.job_from_dict(message["job"]),
            bool(message.get("quick")),
            message.get("lease"),
        )
        await self.channel_layer.group_add(WORKERS_GROUP, self.channel_name)  # (again: Redis groups expire)
        if job.key in self.early_cancels:
            del self.early_cancels[job.key]  # its connection closed before any worker took it
            return
        self.jobs[job.key] = job
        self.heartbeat.ensure_running(self.channel_layer, self.channel_name)  # liveness
        log.info("took request %s", job.request_id)  # which worker serves what, in its log lines
        await self.channel_layer.send(
            job.reply_channel,
            messages.queued(job.request_id, self.channel_name, job.lease),
        )
        if job.quick:  # tokenizing needs no decoder: served beside generations, not behind them
            asyncio.ensure_future(self._serve(job))
            return
        self.waiting[job.key] = job
        if self._decoding is None or self._decoding.done():
            self._decoding = asyncio.ensure_future(self._decode_waiting())

    async def inference_cancel(self, message: dict[str, Any]) -> None:
        """A waiting request leaves the queue and is answered now; a running one has its cancel
        flag raised, which the decode thread sees before its next token or prefill chunk."""
        key = (message["reply_channel"], message["request_id"])
        job = self.jobs.get(key)
        if job is None:
            self.early_cancels[key] = None
            while len(self.early_cancels) > self.EARLY_CANCELS_KEPT:
                self.early_cancels.popitem(last=False)
            return
        job.cancelled.set()
        if self.waiting.pop(key, None) is not None:
            self.jobs.pop(key, None)
            await self._send_all(job, [events.not_started_event(job.request_id)])

    async def _decode_waiting(self) -> None:
        """Feeds the waiting requests to the decode thread, oldest first, one at a time."""
        while self.waiting:
            _, job = self.waiting.popitem(last=False)
            await self._serve(job)

    async def _serve(self, job: Assignment) -> None:
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Any] = asyncio.Queue()

        def emit(event: Any) -> None:
            try:
                loop.call_soon_threadsafe(events.put_nowait, event)
            except RuntimeError:  # the event loop has closed (shutdown): nobody is listening
                job.cancelled.set()

        executor = resources().quick_thread if job.quick else resources().decode_thread
        decoding = loop.run_in_executor(executor, _serve_job, job, emit)
        try:
            while (event := await events.get()) is not _END:
                await self.channel_layer.send(
                    job.reply_channel, messages.event(job.request_id, event, job.lease, self.channel_name)
                )
            await self.channel_layer.send(job.reply_channel, messages.finished(job.request_id, job.lease, self.channel_name))
        except Exception:  # noqa: BLE001 — e.g. the consumer's channel is full or Redis is gone
            log.warning("could not pass on the events of request %s; cancelling it", job.request_id, exc_info=True)
        finally:
            if self.jobs.get(job.key) is job:  # (a resubmission may hold the key now)
                del self.jobs[job.key]
            if not decoding.done():
                job.cancelled.set()  # nobody hears this run any more: stop it within one token
            await asyncio.shield(decoding)

    async def _send_all(self, job: Assignment, last_events: list[dict[str, Any]]) -> None:
        """Sends a request's last events and frees its id, outside the decode thread."""
        try:
            for event in last_events:
                await self.channel_layer.send(
                    job.reply_channel, messages.event(job.request_id, event, job.lease, self.channel_name)
                )
            await self.channel_layer.send(job.reply_channel, messages.finished(job.request_id, job.lease, self.channel_name))
        except Exception:  # noqa: BLE001 — the consumer may be gone: nobody to tell
            log.warning("could not answer the cancelled request %s", job.request_id, exc_info=True)


def _serve_job(job: Assignment, emit: Callable[[Any], None]) -> None:
    """Runs one job on a worker thread, emitting websocket events; never raises."""
    request_id = job.request_id
    try:
        if job.cancelled.is_set():
            raise Cancelled("cancelled before its turn")
        command = job.command
        model = resources().runtime()
        if isinstance(command, frames.Tokenize):
            ids = model.codec.encode(command.text, command.mode, command.system)  # type: ignore[arg-type]
            emit(events.tokens_event(request_id, ids, model.codec, model.shape.context_window, command.offset, command.limit))
        elif isinstance(command, frames.Inspect):
            emit(_inspect(model, command, job.cancelled.is_set))
        elif isinstance(command, frames.Generate):
            _generate(model, command, job, emit)
    except ParamError as error:
        emit(events.param_error_event(error, request_id))
    except Cancelled:
        emit(events.not_started_event(request_id))
    except Exception as error:  # noqa: BLE001 — the client must hear about it, and the worker must go on
        log.exception("request %s failed", request_id)
        emit(events.error_event("generation_failed", f"the model failed during this request: {error}", None, request_id))
    finally:
        emit(_END)


def _generate(model: Runtime, command: frames.Generate, job: Assignment, emit: Callable[[Any], None]) -> None:
    """Streams one generation. Every event also goes to the run's recorder, which saves the run
    when it ends (finished, cancelled, or failed after it started) and puts its id into ``done``."""
    from playground.runs.recording import RunRecorder  # the app registry is ready by now

    request_id = command.request_id
    recorder = RunRecorder(request_id, frames.record_fields(command))

    def record(event: dict[str, Any]) -> None:
        emit(recorder.observe(event))

    try:
        for item in generation.run(model, command.request, job.cancelled.is_set):  # Cancelled before Started
            if isinstance(item, generation.Started):
                record(events.started_event(request_id, item, model.codec, model.info))
            elif isinstance(item, generation.TokenStep):
                record(events.token_event(request_id, item, model.codec))
            elif isinstance(item, BeamStep):
                record(events.beam_step_event(request_id, item, model.codec))
            else:
                emit(recorder.finish(events.done_event(request_id, item)))
    except Cancelled:
        raise  # before ``started``: nothing to save
    except ParamError as error:
        failure = events.param_error_event(error, request_id)
        emit(_with_run_id(failure, recorder.fail(failure)))  # saves what a run that failed midway made
    except Exception as error:  # noqa: BLE001
        log.exception("generation %s failed", request_id)
        failure = events.error_event("generation_failed", f"the model failed during this run: {error}", None, request_id)
        emit(_with_run_id(failure, recorder.fail(failure)))


def _with_run_id(event: dict[str, Any], run_id: str | None) -> dict[str, Any]:
    """An error of a run that was saved (it had started) names the saved run."""
    return event if run_id is None else event | {"run_id": run_id}


def _inspect(model: Runtime, command: frames.Inspect, is_cancelled: Callable[[], bool]) -> dict[str, Any]:
    """The distribution at one position under each setting asked for, from the real logits."""
    prompt_ids = model.codec.encode(command.prompt, command.mode, command.system)  # type: ignore[arg-type]
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
        results += inspect_position(seen, history, [sampling], model.codec.token_texts(), command.top_n)
    return events.inspection_event(command.request_id, len(prefix), results, model.codec)


_embedded: WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Future[Any]] = WeakKeyDictionary()


def ensure_embedded_worker() -> None:
    """Starts an in-process worker on this event loop once, when settings ask for one."""
    if not settings.INFERENCE.get("EMBEDDED_WORKER", True):
        return
    loop = asyncio.get_running_loop()
    running = _embedded.get(loop)
    if running is not None and not running.done():
        return
    worker = Worker(
        application=ChannelNameRouter({INFERENCE_CHANNEL: InferenceWorker.as_asgi()}),
        channels=[INFERENCE_CHANNEL],
        channel_layer=get_channel_layer(),
    )
    _embedded[loop] = asyncio.ensure_future(worker.arun())
    log.info("embedded inference worker started")
