"""The inference worker: serves generation requests arriving on the ``inference`` channel.

The websocket consumer and the worker speak only through the channel layer, in four messages:

- ``inference.generate`` (consumer → the shared ``inference`` channel): ``reply_channel``,
  ``request_id`` and the request as a dict;
- ``inference.queued`` (worker → consumer): the worker's own ``worker_channel``, where cancels go;
- ``inference.event`` (worker → consumer): one websocket event (``started``, ``token``, ``done``,
  ``error``) to pass on as it is;
- ``inference.cancel`` (consumer → ``worker_channel``).

Embedded default: the worker runs inside the server process on the in-memory channel layer,
started on the first websocket connection. Scale-out: point ``CHANNEL_LAYERS`` at Redis and run
``python manage.py runworker inference`` on other machines; the consumer does not change.

Each worker process decodes one request at a time on one thread of its own, so the event loop
never blocks; the thread checks the request's cancel flag before every token.
"""

from __future__ import annotations

import asyncio
import logging
import threading
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
from inference.errors import ParamError
from inference.model_dir import default_model_dir
from inference.runtime import Runtime, load_runtime
from playground import protocol

log = logging.getLogger(__name__)

INFERENCE_CHANNEL = "inference"
_decode_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decode")
_END = object()


@lru_cache(maxsize=1)
def runtime() -> Runtime:
    """The process's model, loaded once (on the decode thread: it takes a second or two)."""
    config = settings.INFERENCE
    loaded = load_runtime(
        default_model_dir(), config["EXECUTION_PROVIDERS"], config["INTRA_OP_THREADS"]
    )
    log.info("inference worker serving %s on %s", loaded.info.name, loaded.info.execution_provider)
    return loaded


@dataclass
class Job:
    request_id: str
    reply_channel: str
    request_data: dict[str, Any]
    cancelled: threading.Event = field(default_factory=threading.Event)


class InferenceWorker(AsyncConsumer):
    """Takes requests off the ``inference`` channel and streams their events back."""

    async def inference_generate(self, message: dict[str, Any]) -> None:
        """Queues a request and tells the consumer where to send cancels."""
        job = Job(message["request_id"], message["reply_channel"], message["request"])
        self.jobs: dict[tuple[str, str], Job] = getattr(self, "jobs", {})
        self.jobs[(job.reply_channel, job.request_id)] = job
        await self.channel_layer.send(
            job.reply_channel,
            {"type": "inference.queued", "request_id": job.request_id, "worker_channel": self.channel_name},
        )
        asyncio.ensure_future(self._serve(job))

    async def inference_cancel(self, message: dict[str, Any]) -> None:
        """Raises the request's cancel flag; the decode thread sees it before its next token."""
        job = getattr(self, "jobs", {}).get((message["reply_channel"], message["request_id"]))
        if job is not None:
            job.cancelled.set()

    async def _serve(self, job: Job) -> None:
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Any] = asyncio.Queue()

        def emit(event: Any) -> None:
            loop.call_soon_threadsafe(events.put_nowait, event)

        decoding = loop.run_in_executor(_decode_thread, _decode, job, emit)
        try:
            while (event := await events.get()) is not _END:
                await self.channel_layer.send(
                    job.reply_channel, {"type": "inference.event", "request_id": job.request_id, "event": event}
                )
            await decoding
        finally:
            self.jobs.pop((job.reply_channel, job.request_id), None)


def _decode(job: Job, emit: Any) -> None:
    """Runs one request on the decode thread, emitting websocket events; never raises.

    Every event also goes to the run's recorder, which saves the run when it ends (finished,
    cancelled, or failed after it started) and puts the run's id into ``done``.
    """
    from playground.runs.recording import RunRecorder  # the app registry is ready by now

    request_id = job.request_id
    recorder = RunRecorder(request_id, job.request_data)

    def record(event: dict[str, Any]) -> None:
        recorder.observe(event)
        emit(event)

    def failed(event: dict[str, Any]) -> dict[str, Any]:
        recorder.fail(event)  # saves what a run that failed midway had generated
        return event

    try:
        model = runtime()
        request = protocol.request_from_dict(job.request_data)
        for item in generation.run(model, request, job.cancelled.is_set):
            if isinstance(item, generation.Started):
                record(protocol.started_event(request_id, item, model.codec, model.info))
            elif isinstance(item, generation.TokenStep):
                record(protocol.token_event(request_id, item, model.codec))
            elif isinstance(item, BeamStep):
                record(protocol.beam_step_event(request_id, item, model.codec))
            else:
                emit(recorder.finish(protocol.done_event(request_id, item)))
    except ParamError as error:
        emit(failed(protocol.error_event(error.code, error.message, error.param, request_id)))
    except protocol.ProtocolError as error:
        emit(failed(error.to_event() | {"request_id": request_id}))
    except Exception as error:  # noqa: BLE001 — the client must hear about it, and the worker must go on
        log.exception("generation %s failed", request_id)
        emit(failed(protocol.error_event(
            "generation_failed", f"the model failed during this run: {error}", None, request_id
        )))
    finally:
        emit(_END)


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
