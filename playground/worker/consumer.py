"""The inference worker's channel consumer (``InferenceWorker``) and the embedded default's start
(``ensure_embedded_worker``); the worker side as a whole is described in ``playground.worker``."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections import OrderedDict
from typing import Any
from weakref import WeakKeyDictionary

from channels.consumer import AsyncConsumer, get_handler_name
from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer
from channels.routing import ChannelNameRouter
from django.conf import settings

from inference.model_catalog import model_dir_for
from inference.model_dir import ModelNotBuiltError, read_manifest
from playground.wire import channel_messages
from playground.wire.channel_messages import INFERENCE_CHANNEL, WORKERS_GROUP
from playground.wire.events import FINAL_EVENTS, event_type
from playground.wire.jobs import is_quick
from playground.worker.heartbeat import WorkerHeartbeat
from playground.worker.intake import IntakeWorker, intake_gate
from playground.worker.outbox import outbox
from playground.worker.serving import END, Assignment, resources, serve_quick_job, submit_generation

log = logging.getLogger(__name__)


class InferenceWorker(AsyncConsumer):
    """Takes requests off the ``inference`` channel and streams their events back.

    Generations go to the process's decode loop, which admits them in arrival order as rows free;
    a cancel raises the request's flag, which the loop sees before the request's next token (one
    still waiting leaves unrun: its answer is an ``error`` of code ``cancelled``, nothing is saved).

    Nothing is sent to a reply channel nobody reads: after a cancel that says its front door closed
    (``closed``), or once the channel is full or gone (backpressure: the request is cancelled, one
    warning logged), the request's remaining events are dropped here, its run still saved.
    """

    EARLY_CANCELS_KEPT = 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.jobs: dict[tuple[str, str], Assignment] = {}  # every request this worker holds, waiting or running
        # Cancels that arrived before their request (a consumer that closed before any worker took
        # its request): (reply_channel, request_id), oldest first.
        self.early_cancels: OrderedDict[tuple[str, str], None] = OrderedDict()
        self.heartbeat = WorkerHeartbeat(self._heard, settings.INFERENCE["MODELS"])  # liveness: while it holds any job

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Every message straight to its handler, without the database check channels makes before
        each (``aclose_old_connections``, a hop to the sync thread and back): no handler here reads
        the database (a run is saved on the decode loop's thread, which keeps its own connection)."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def inference_ping(self, message: dict[str, Any]) -> None:
        """Readiness and load: who answers, whether its model is built, and its ``load``."""
        try:
            served = settings.INFERENCE["MODELS"]
            manifest = read_manifest(model_dir_for(served[0], served))
            model: dict[str, Any] = {"model_built": True, "model": manifest.get("model_name", "?")}
        except (ModelNotBuiltError, ValueError, OSError) as error:
            model = {"model_built": False, "model_error": str(error)}
        pong = channel_messages.pong(socket.gethostname(), os.getpid(), self.load(), model, settings.INFERENCE["MODELS"])
        await self.channel_layer.send(message["reply_channel"], pong)

    def load(self) -> dict[str, int]:
        """The ping's ``load``: requests decoding, rows in use, requests taken but not decoding yet.
        A request whose last event is on its way is not counted: a page that has its ``done`` and
        asks at once hears the run has ended (the job itself is let go after the last send)."""
        generations = sum(1 for job in self.jobs.values() if not job.quick and not job.answered)
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
            command = channel_messages.job_from_dict(message["job"])
            quick = is_quick(command)
            job = Assignment(message["request_id"], message["reply_channel"], command, quick, message.get("lease"))
            await self._join_workers()
            if job.key in self.early_cancels:
                del self.early_cancels[job.key]  # its connection closed before any worker took it
                return
            earlier = self.jobs.get(job.key)
            if earlier is not None and earlier.lease == job.lease:  # the same message taken twice: served once
                log.warning("request %s was taken twice; the second is dropped", job.request_id)
                return
            if earlier is not None:  # sent again under a new lease (the layer lost it or our answer): the new one wins
                earlier.unheard = True
                earlier.cancelled.set()
            self.jobs[job.key] = job
            self.heartbeat.ensure_running(self.channel_layer, self.channel_name)  # liveness
            log.info("took request %s", job.request_id)  # which worker serves what, in its log lines
            await self._pass_on(job, channel_messages.queued(job.request_id, self.channel_name, job.lease))
            asyncio.ensure_future(self._serve(job))
        finally:
            if key not in self.jobs:
                intake_gate().release(key)

    async def _join_workers(self) -> None:
        """Joins the workers' group (again on every request: Redis groups expire, and a restarted
        Redis has none); a layer that cannot be reached now is tried again with the next request."""
        try:
            await self.channel_layer.group_add(WORKERS_GROUP, self.channel_name)
        except Exception as error:  # noqa: BLE001
            log.warning("could not join the workers' group: %s", error)

    async def inference_cancel(self, message: dict[str, Any]) -> None:
        """Raises a request's cancel flag: the decode loop sees it before the request's next token
        or prefill chunk, or when it would admit it. A cancel from a front door that closed also
        stops every send to it."""
        key = (message["reply_channel"], message["request_id"])
        job = self.jobs.get(key)
        if job is None:
            self.early_cancels[key] = None
            while len(self.early_cancels) > self.EARLY_CANCELS_KEPT:
                self.early_cancels.popitem(last=False)
            return
        if message.get("closed"):
            job.unheard = True
        job.cancelled.set()

    def _heard(self) -> list[Assignment]:
        """The jobs whose front doors still listen: they hear heartbeats."""
        return [job for job in self.jobs.values() if not job.unheard]

    async def _pass_on(self, job: Assignment, message: dict[str, Any]) -> None:
        """Sends a message about ``job`` to its front door; a channel that is full (nobody reads it
        fast enough) or gone ends the job instead: cancelled, nothing more sent, one warning."""
        try:
            await self.channel_layer.send(job.reply_channel, message)
        except Exception as error:  # noqa: BLE001 — ChannelFull, or Redis gone: the same for this job
            job.unheard = True
            job.cancelled.set()  # nobody hears this run any more: stop it within one token
            why = "is full" if isinstance(error, ChannelFull) else f"could not be reached ({type(error).__name__}: {error})"
            log.warning("request %s: its reply channel %s; cancelled, nothing more is sent to it", job.request_id, why)

    async def _serve(self, job: Assignment) -> None:
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Any] = asyncio.Queue()
        box = outbox()  # the decode thread's events reach the loop in bursts, not one wake-up each

        def emit(event: Any, wake: bool = True) -> None:
            try:
                box.put(events, event, wake)
            except RuntimeError:  # the event loop has closed (shutdown): nobody is listening
                job.cancelled.set()

        def emit_in_step(event: Any) -> None:  # the decode loop's: sent on when its step ends (flush_outboxes)
            emit(event, wake=False)

        if job.quick:
            working: asyncio.Future[Any] = loop.run_in_executor(resources().quick_thread, serve_quick_job, job, emit)
        else:
            working = asyncio.ensure_future(submit_generation(job, emit, emit_in_step))
        try:
            while (event := await events.get()) is not END:  # (after ``unheard``: drained, not sent, until the run ends)
                job.answered = job.answered or event_type(event) in FINAL_EVENTS
                if not job.unheard:
                    await self._pass_on(job, channel_messages.event(job.request_id, event, job.lease, self.channel_name))
            if not job.unheard:
                await self._pass_on(job, channel_messages.finished(job.request_id, job.lease, self.channel_name))
        finally:
            if self.jobs.get(job.key) is job:  # (a resubmission may hold the key now)
                del self.jobs[job.key]
            intake_gate().release(job.key)
            await asyncio.shield(working)


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
