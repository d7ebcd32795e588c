"""The inference worker: serves generation requests arriving on the ``inference`` channel.

The websocket consumer and the worker speak only through the channel layer, in five messages:

- ``inference.request`` (consumer → the shared ``inference`` channel): ``reply_channel``,
  ``request_id`` and the client's checked ``frame`` (a generate, tokenize or inspect request);
- ``inference.queued`` (worker → consumer): the worker's own ``worker_channel``, where cancels go;
- ``inference.event`` (worker → consumer): one websocket event (``started``, ``token``, ``done``,
  ``error``) to pass on as it is;
- ``inference.finished`` (worker → consumer): the request has had its last event;
- ``inference.cancel`` (consumer → ``worker_channel``; for a request no worker has acknowledged
  when its connection closes, to the ``inference`` channel and the ``inference-workers`` group,
  and the worker that later receives the request drops it).

Embedded default: the worker runs inside the server process on the in-memory channel layer,
started on the first websocket connection. Scale-out: point ``CHANNEL_LAYERS`` at Redis and run
``python manage.py runworker inference`` on other machines; the consumer does not change.

Each worker process decodes one request at a time on one thread of its own, so the event loop
never blocks; the thread checks the request's cancel flag before every token. Tokenizing, which
needs no decoder, has a thread of its own and never waits behind a generation.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable
from weakref import WeakKeyDictionary

from channels.consumer import AsyncConsumer
from channels.layers import get_channel_layer
from channels.routing import ChannelNameRouter
from channels.worker import Worker
from django.conf import settings

from inference import generation
from inference.beam import BeamStep
from inference.errors import ParamError
from inference.model_dir import default_model_dir
from inference.runtime import Runtime, load_runtime
from inference.whatif import Cancelled, LogitsCache, inspect_position
from playground import health, protocol

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
                self._runtime = load_runtime(
                    default_model_dir(), config["EXECUTION_PROVIDERS"], config["INTRA_OP_THREADS"]
                )
                info = self._runtime.info
                log.info("inference worker serving %s on %s", info.name, info.execution_provider)
            return self._runtime


@lru_cache(maxsize=1)
def resources() -> ProcessResources:
    return ProcessResources()


@dataclass
class Job:
    request_id: str
    reply_channel: str
    frame: str  # the client's frame, parsed again here: a worker trusts only its own checks
    quick: bool  # tokenizing: no decoder needed, so it never waits behind a generation
    cancelled: threading.Event = field(default_factory=threading.Event)


class InferenceWorker(AsyncConsumer):
    """Takes requests off the ``inference`` channel and streams their events back."""

    EARLY_CANCELS_KEPT = 1024
    inference_ping = health.answer_ping  # readiness: who answers, and whether its model is built

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.jobs: dict[tuple[str, str], Job] = {}
        # Cancels that arrived before their request (a consumer that closed before any worker took
        # its request): (reply_channel, request_id), oldest first.
        self.early_cancels: OrderedDict[tuple[str, str], None] = OrderedDict()

    async def inference_request(self, message: dict[str, Any]) -> None:
        """Queues a request and tells the consumer where to send cancels."""
        job = Job(message["request_id"], message["reply_channel"], message["frame"], bool(message.get("quick")))
        key = (job.reply_channel, job.request_id)
        await self.channel_layer.group_add(WORKERS_GROUP, self.channel_name)  # (again: Redis groups expire)
        if key in self.early_cancels:
            del self.early_cancels[key]  # its connection closed before any worker took it
            return
        self.jobs[key] = job
        log.info("took request %s", job.request_id)  # which worker serves what, in its log lines
        await self.channel_layer.send(
            job.reply_channel,
            {"type": "inference.queued", "request_id": job.request_id, "worker_channel": self.channel_name},
        )
        asyncio.ensure_future(self._serve(job))

    async def inference_cancel(self, message: dict[str, Any]) -> None:
        """Raises the request's cancel flag; the decode thread sees it before its next token."""
        key = (message["reply_channel"], message["request_id"])
        job = self.jobs.get(key)
        if job is not None:
            job.cancelled.set()
            return
        self.early_cancels[key] = None
        while len(self.early_cancels) > self.EARLY_CANCELS_KEPT:
            self.early_cancels.popitem(last=False)

    async def _serve(self, job: Job) -> None:
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Any] = asyncio.Queue()

        def emit(event: Any) -> None:
            try:
                loop.call_soon_threadsafe(events.put_nowait, event)
            except RuntimeError:  # the event loop has closed (shutdown): nobody is listening
                job.cancelled.set()

        # Tokenizing needs no decoder: it does not wait behind a generation.
        executor = resources().quick_thread if job.quick else resources().decode_thread
        decoding = loop.run_in_executor(executor, _serve_job, job, emit)
        try:
            while (event := await events.get()) is not _END:
                await self.channel_layer.send(
                    job.reply_channel, {"type": "inference.event", "request_id": job.request_id, "event": event}
                )
            await self.channel_layer.send(job.reply_channel, {"type": "inference.finished", "request_id": job.request_id})
        except Exception:  # noqa: BLE001 — e.g. the consumer's channel is full or Redis is gone
            log.exception("could not pass on the events of request %s; cancelling it", job.request_id)
        finally:
            self.jobs.pop((job.reply_channel, job.request_id), None)
            if not decoding.done():
                job.cancelled.set()  # nobody hears this run any more: stop it within one token
            await asyncio.shield(decoding)


def _serve_job(job: Job, emit: Callable[[Any], None]) -> None:
    """Runs one job on a worker thread, emitting websocket events; never raises."""
    request_id = job.request_id
    try:
        command = protocol.parse_client_frame(job.frame)
        model = resources().runtime()
        if isinstance(command, protocol.Tokenize):
            ids = model.codec.encode(command.text, command.mode, command.system)  # type: ignore[arg-type]
            emit(protocol.tokens_event(request_id, ids, model.codec, model.shape.context_window))
        elif isinstance(command, protocol.Inspect):
            emit(_inspect(model, command, job.cancelled.is_set))
        elif isinstance(command, protocol.Generate):
            _generate(model, command, job, emit)
    except ParamError as error:
        emit(protocol.param_error_event(error, request_id))
    except Cancelled:
        emit(protocol.error_event("cancelled", "the request was cancelled before its answer was ready", None, request_id))
    except protocol.ProtocolError as error:
        emit(error.to_event() | {"request_id": request_id})
    except Exception as error:  # noqa: BLE001 — the client must hear about it, and the worker must go on
        log.exception("request %s failed", request_id)
        emit(protocol.error_event("generation_failed", f"the model failed during this request: {error}", None, request_id))
    finally:
        emit(_END)


def _generate(model: Runtime, command: protocol.Generate, job: Job, emit: Callable[[Any], None]) -> None:
    """Streams one generation. Every event also goes to the run's recorder, which saves the run
    when it ends (finished, cancelled, or failed after it started) and puts its id into ``done``."""
    from playground.runs.recording import RunRecorder  # the app registry is ready by now

    request_id = command.request_id
    recorder = RunRecorder(request_id, json.loads(job.frame))

    def record(event: dict[str, Any]) -> None:
        emit(recorder.observe(event))

    try:
        for item in generation.run(model, command.request, job.cancelled.is_set):
            if isinstance(item, generation.Started):
                record(protocol.started_event(request_id, item, model.codec, model.info))
            elif isinstance(item, generation.TokenStep):
                record(protocol.token_event(request_id, item, model.codec))
            elif isinstance(item, BeamStep):
                record(protocol.beam_step_event(request_id, item, model.codec))
            else:
                emit(recorder.finish(protocol.done_event(request_id, item)))
    except ParamError as error:
        failure = protocol.param_error_event(error, request_id)
        emit(_with_run_id(failure, recorder.fail(failure)))  # saves what a run that failed midway made
    except Exception as error:  # noqa: BLE001
        log.exception("generation %s failed", request_id)
        failure = protocol.error_event("generation_failed", f"the model failed during this run: {error}", None, request_id)
        emit(_with_run_id(failure, recorder.fail(failure)))


def _with_run_id(event: dict[str, Any], run_id: str | None) -> dict[str, Any]:
    """An error of a run that was saved (it had started) names the saved run."""
    return event if run_id is None else event | {"run_id": run_id}


def _inspect(model: Runtime, command: protocol.Inspect, is_cancelled: Callable[[], bool]) -> dict[str, Any]:
    """The distribution at one position under each setting asked for, from the real logits."""
    prompt_ids = model.codec.encode(command.prompt, command.mode, command.system)  # type: ignore[arg-type]
    prefix = list(command.prefix_tokens)
    ids = prompt_ids + prefix
    if len(ids) > model.shape.context_window:
        raise ParamError("prefix_tokens", f"the prompt and prefix_tokens are {len(ids)} tokens; the context window is {model.shape.context_window}", code="prompt_too_long")
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
    return protocol.inspection_event(command.request_id, len(prefix), results, model.codec)


_embedded: "WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Future[Any]]" = WeakKeyDictionary()


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
