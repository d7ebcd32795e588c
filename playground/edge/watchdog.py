"""The front door's half of liveness (``playground.wire.liveness``): a ``Watchdog`` per reply channel
that holds each request's lease, renews it on every message from its worker, gives a request up
(``worker_lost``, ``no_worker``, ``busy``) or sends it again when its worker went silent, and saves
a run that had started as failed; and ``send_cancel``, the one rule of where a cancel goes.

A watchdog judges workers only while its connection listens: ``stop()`` (the connection closed)
ends it for good, so a closed connection's requests are cancelled, never resubmitted nor failed;
and a silence while the connection's own channel holds messages it has not read yet (a worker's
heartbeats among them), or while the channel layer itself cannot be reached, is the connection's
or the layer's, not the worker's.

When the channel layer restarts (Redis: ``channel_layer.layer_epoch`` changes) every message it
held is gone: a request no worker had acknowledged is sent again (a fresh lease, its place in line),
one a worker holds but has not started waits for that worker as before, and one that was streaming,
whose events in flight may be lost, ends with ``interrupted`` (its worker is told to cancel; its run
is saved with what it had made)."""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from channels.exceptions import ChannelFull

from playground.edge import waiting_line
from playground.runs.recording import RunRecorder
from playground.wire import channel_messages
from playground.wire.channel_layer import layer_epoch, oldest_unread_age
from playground.wire.channel_messages import WORKERS_GROUP
from playground.wire.events import FINAL_EVENTS, Frame
from playground.wire.liveness import Timing

log = logging.getLogger(__name__)

WORKER_LOST = "worker_lost"
INTERRUPTED = "interrupted"
NO_WORKER = "no_worker"
BUSY = "busy"
BUSY_RETRY_AFTER_SECONDS = 5.0  # the retry hint of a request refused because every worker stayed full
# A request waits in the channel for a full worker's room at most settings.WAITING_LINE's
# MAX_WAIT_SECONDS (``waiting_line.max_wait_seconds``); the channel layer keeps messages a margin
# longer (``channel_layer.message_expiry``), so it is refused with ``busy`` before the layer drops it.
ALIVE_PING_SECONDS = 1.0  # how long a watchdog waits for a worker's answer before calling a request unserved


@dataclass
class Lease:
    """One submitted request as its connection's watchdog sees it."""

    request_id: str
    token: str
    record: dict[str, Any] | None  # the request's fields a failed run is saved with (generate only)
    ack_deadline: float  # when an unacknowledged request is given up
    submitted_at: float = 0.0
    expires_at: float = math.inf  # when an acknowledged request is given up, unless renewed
    worker_channel: str | None = None
    acknowledged: bool = False
    recorder: RunRecorder | None = None
    # token frames relayed since ``started``, as the worker encoded them: read into the recorder
    # only if the run must be saved here (its worker lost), not parsed again for every token
    frames: list[Frame] = field(default_factory=list)
    message: dict[str, Any] | None = None  # the ``inference.request`` as sent (with this lease)
    started: bool = False  # its worker has sent an event for it (a generation's ``started`` first)

    @property
    def channel(self) -> str:
        """The shared channel the request went to: ``inference``, or ``inference-quick``."""
        return channel_messages.channel_for(self.message or {})


Deliver = Callable[[dict[str, Any]], Awaitable[None]]


class Watchdog:
    """Watches one connection's requests; gives up a request whose worker went silent.

    ``deliver`` is the consumer's handler for ``inference.event`` messages: a lost request's error
    goes through it like any worker's final event, so the consumer frees the id its usual way.
    """

    def __init__(
        self,
        channel_layer: Any,
        reply_channel: str,
        deliver: Deliver,
        clock: Callable[[], float] = time.monotonic,
        resubmitted: Callable[[str], None] = lambda request_id: None,
    ) -> None:
        self.channel_layer = channel_layer
        self.reply_channel = reply_channel
        self.deliver = deliver
        self.resubmitted = resubmitted  # told the request id: its connection forgets the lost worker
        self.clock = clock
        self.timing = Timing.from_settings()
        self.leases: dict[str, Lease] = {}
        self.stopped = False  # the connection closed: nothing is judged, resubmitted or failed any more
        self.epoch: str | None = None  # the channel layer's epoch the requests were sent in (None: not known)
        self._task: asyncio.Future[None] | None = None

    def submitted(self, request_id: str, record: dict[str, Any] | None, message: dict[str, Any]) -> dict[str, Any]:
        """Watches a request from now on; returns its ``inference.request`` message with its lease."""
        token = secrets.token_hex(8)
        now = self.clock()
        sent = message | {"lease": token}
        self.leases[request_id] = Lease(request_id, token, record, now + self.timing.ack_timeout_seconds, now, message=sent)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._watch())
        return sent

    async def note_epoch(self) -> None:
        """Learns the channel layer's epoch before a request is sent (a restart after it is noticed)."""
        if self.epoch is None:
            self.epoch = await self._current_epoch()

    def channels(self) -> dict[str, str]:
        """request id → the shared channel each watched request went to."""
        return {request_id: lease.channel for request_id, lease in self.leases.items()}

    def accepts(self, message: dict[str, Any]) -> bool:
        """Whether a worker's ``inference.queued``, ``.event`` or ``.finished`` message belongs to
        the request as submitted now (not to an earlier submission given up since); renews the
        request's lease, records its run's events, and forgets the request after its last."""
        lease = self.leases.get(message["request_id"])
        token = message.get("lease")
        if lease is None:
            return token is None  # a request given up or finished (or from a worker without leases)
        if token is not None and token != lease.token:
            return False
        kind = message["type"]
        if kind == "inference.queued":
            lease.acknowledged, lease.worker_channel = True, message["worker_channel"]
        self._renew(lease)
        if kind == "inference.event":
            lease.started = True
            event = channel_messages.event_of(message)
            self._record(lease, event)
            if not isinstance(event, Frame) and event["type"] in FINAL_EVENTS:
                self.leases.pop(lease.request_id, None)
        elif kind == "inference.finished":
            self.leases.pop(lease.request_id, None)
        return True

    def heartbeat(self, message: dict[str, Any]) -> None:
        """A worker says it still holds these requests."""
        for request_id, token in message.get("leases", []):
            lease = self.leases.get(request_id)
            if lease is not None and lease.token == token:
                lease.acknowledged = True
                lease.worker_channel = lease.worker_channel or message.get("worker_channel")
                self._renew(lease)

    def forget(self, request_id: str) -> None:
        """The request was refused before any worker could take it: nothing to watch."""
        self.leases.pop(request_id, None)

    def stop(self) -> None:
        """The connection closed: nothing to watch any more (its requests were cancelled); for good."""
        self.stopped = True
        if self._task is not None:
            self._task.cancel()
        self.leases.clear()

    def _renew(self, lease: Lease) -> None:
        if lease.acknowledged:
            lease.expires_at = self.clock() + self.timing.lease_seconds

    def _record(self, lease: Lease, event: dict[str, Any] | Frame) -> None:
        if isinstance(event, Frame):
            if lease.recorder is not None:
                lease.frames.append(event)
            return
        kind = event.get("type")
        if kind == "started" and event.get("run_id"):
            lease.recorder = relayed_recorder(lease.request_id, lease.record or {}, event)
        elif kind in ("token", "beam_step") and lease.recorder is not None:
            lease.recorder.observe(event)

    async def _watch(self) -> None:
        """Looks at the leases every ``watch_interval`` while there are any."""
        interval = self.timing.watch_interval
        expected = self.clock() + interval
        while self.leases and not self.stopped:
            alive: dict[str | None, bool] = {}  # model → whether a worker serving it answers a ping: asked at most once a round
            await asyncio.sleep(interval)
            now = self.clock()
            stalled = now - expected
            if stalled > interval:
                # This event loop did not run for a while: the silence was ours, not the workers'.
                self._postpone(stalled)
            expected = now + interval
            if await self._layer_restarted():
                await self._after_restart()
                continue
            expired = any(lease.acknowledged and now >= lease.expires_at for lease in self.leases.values())
            if expired and await self._unread():  # the workers' words wait unread in our own channel
                for lease in self.leases.values():  # judged again once they are read
                    lease.expires_at = max(lease.expires_at, now + interval)
                continue
            for lease in list(self.leases.values()):
                if self.stopped:
                    return
                try:
                    if lease.acknowledged and now >= lease.expires_at:  # its worker went silent
                        if not lease.started:
                            await self._resubmit(lease)  # held but never started: another worker takes it
                            continue
                        await self._give_up(
                            lease,
                            WORKER_LOST,
                            (
                                f"the inference worker serving this request stopped answering (nothing from it for "
                                f"{self.timing.lease_seconds:g} s); the request was abandoned"
                            ),
                        )
                    elif not lease.acknowledged and now >= lease.ack_deadline:
                        model = (lease.message or {}).get("model")
                        if model not in alive:  # asked once per model and round
                            alive[model] = await self._workers_alive(model)
                        waited = now - lease.submitted_at
                        max_wait = waiting_line.max_wait_seconds()
                        if alive[model] and waited < max_wait:  # every worker is full: it waits for room
                            lease.ack_deadline = min(now + self.timing.ack_timeout_seconds, lease.submitted_at + max_wait)
                            continue
                        if alive[model]:  # the layer would drop it soon: refused with a hint rather than lost
                            await self._give_up(
                                lease,
                                BUSY,
                                f"every inference worker stayed busy for {waited:.0f} s; try again shortly",
                                retry_after=BUSY_RETRY_AFTER_SECONDS,
                            )
                            continue
                        await self._give_up(
                            lease,
                            NO_WORKER,
                            (
                                f"no inference worker took this request within {self.timing.ack_timeout_seconds:g} s; "
                                "is a worker running (manage.py runworker inference)?"
                            ),
                        )
                except Exception:  # noqa: BLE001 — the other requests must still be watched
                    log.exception("could not give up request %s", lease.request_id)
                    self.leases.pop(lease.request_id, None)

    def _postpone(self, seconds: float) -> None:
        """The silence of the last ``seconds`` was the connection's: no worker is blamed for it."""
        for lease in self.leases.values():
            lease.expires_at += seconds
            lease.ack_deadline += seconds

    async def _unread(self) -> bool:
        """Whether this connection's channel holds a message it has left unread for longer than a
        watch interval (it lags behind its mail); true too while the layer cannot be reached (Redis
        restarting): the workers' words cannot reach us then."""
        try:
            age = await oldest_unread_age(self.channel_layer, self.reply_channel)
        except Exception:  # noqa: BLE001 — the layer's silence, not the worker's
            return True
        return age is not None and age > self.timing.watch_interval

    async def _current_epoch(self) -> str | None:
        try:
            return await layer_epoch(self.channel_layer)
        except Exception:  # noqa: BLE001 — cannot tell now; asked again next round
            return None

    async def _layer_restarted(self) -> bool:
        """Whether the channel layer restarted since the requests were sent (every message it held is gone)."""
        epoch = await self._current_epoch()
        if epoch is None:  # an in-memory layer, or Redis unreachable right now
            return False
        if self.epoch is None or epoch == self.epoch:
            self.epoch = epoch
            return False
        self.epoch = epoch
        return True

    async def _after_restart(self) -> None:
        """The layer lost every message it held: see the module."""
        log.warning("the channel layer restarted: the requests of %s are sent again or ended", self.reply_channel)
        for lease in list(self.leases.values()):
            if self.stopped:
                return
            try:
                if not lease.acknowledged:
                    await self._send_again(lease, "the channel layer restarted before a worker took it")
                elif lease.started:
                    await self._give_up(
                        lease,
                        INTERRUPTED,
                        "the channel layer (Redis) restarted while this run streamed, so some of its events may "
                        "have been lost; the run was stopped (try again)",
                    )
                else:
                    self._renew(lease)  # its worker holds it and speaks again now that the layer is back
            except Exception:  # noqa: BLE001 — the other requests must still be handled
                log.exception("could not resubmit or end request %s after a layer restart", lease.request_id)

    async def _resubmit(self, lease: Lease) -> None:
        """A worker took the request and died before starting it: it goes back to the shared channel
        under a new lease (same request id), at the place in line it had (the Redis layer's
        ``send_in_place``), for whichever worker has room; the dead one, should it come back, is
        told to drop it and is not listened to any more."""
        if self.stopped or self.leases.get(lease.request_id) is not lease:
            return  # the connection closed meanwhile: its requests were cancelled, not sent again
        await self._cancel_quietly(lease)
        await self._send_again(lease, "its worker was lost before starting it")

    async def _send_again(self, lease: Lease, why: str) -> None:
        """Sends the request to its shared channel again under a new lease (same request id), at the
        place in line it had, for whichever worker has room; what comes under the old lease is dropped."""
        token = secrets.token_hex(8)
        now = self.clock()
        lease.token, lease.acknowledged, lease.worker_channel = token, False, None
        lease.expires_at, lease.ack_deadline = math.inf, now + self.timing.ack_timeout_seconds
        lease.message = (lease.message or {}) | {"lease": token}
        self.resubmitted(lease.request_id)
        log.warning("request %s of %s: %s; resubmitted", lease.request_id, self.reply_channel, why)
        ticket = lease.message.get("ticket")
        if isinstance(ticket, int | float) and hasattr(self.channel_layer, "send_in_place"):
            await self.channel_layer.send_in_place(lease.channel, lease.message, float(ticket))  # its old place in line
        else:
            await self.channel_layer.send(lease.channel, lease.message)

    async def _workers_alive(self, model: str | None) -> bool:
        """Whether an inference worker serving ``model`` answers a ping sent to the workers' group
        within ``ALIVE_PING_SECONDS`` (its pong lists the models it serves; one that lists none is
        taken to serve every model): a request no worker has taken is then waiting for a full
        worker's room (workers read the shared channel only when they have room), not lost."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ALIVE_PING_SECONDS
        try:
            reply_channel = await self.channel_layer.new_channel("alive.")
            await self.channel_layer.group_send(WORKERS_GROUP, channel_messages.ping(reply_channel))
            while True:
                pong = await asyncio.wait_for(self.channel_layer.receive(reply_channel), deadline - loop.time())
                serves = pong.get("models") or []
                if model is None or not serves or model in serves:
                    return True
        except Exception:  # noqa: BLE001 — no answer (a timeout) or no layer: nobody alive to wait for
            return False

    async def _give_up(self, lease: Lease, code: str, message: str, retry_after: float | None = None) -> None:
        if self.stopped or self.leases.get(lease.request_id) is not lease:
            return  # it ended meanwhile, or the connection closed (its requests were cancelled)
        await self._cancel_quietly(lease)
        error: dict[str, Any] = {
            "type": "error",
            "request_id": lease.request_id,
            "error": {"code": code, "message": message, "param": None},
        }
        if retry_after is not None:
            error["error"]["retry_after"] = retry_after
        if lease.recorder is not None:
            for frame in lease.frames:
                lease.recorder.observe(frame.event())
            lease.frames.clear()
            run_id = await database_sync_to_async(save_failed_run)(lease.recorder, error)
            if run_id is not None:
                error["run_id"] = run_id
        if self.stopped or self.leases.get(lease.request_id) is not lease:
            return  # its worker spoke up while the run was being saved (its own end stands), or the connection closed
        log.warning("request %s of %s: %s", lease.request_id, self.reply_channel, code)
        await self.deliver(channel_messages.event(lease.request_id, error, lease.token))

    async def _cancel_quietly(self, lease: Lease) -> None:
        """Tells a worker that holds the request after all to drop it, and one that takes it later
        to skip it; neither may exist."""
        await send_cancel(self.channel_layer, lease.request_id, self.reply_channel, lease.worker_channel, lease.channel)


async def send_cancel(
    layer: Any, request_id: str, reply_channel: str, worker_channel: str | None, shared_channel: str, closed: bool = False
) -> None:
    """Where a cancel goes, the one rule: to the worker that acknowledged the request; before any did,
    to the shared channel it waits in (behind the request itself) and to the workers' group (which
    reaches every worker that took it, even when that channel is full). ``closed``: the front door
    has gone, so the worker sends nothing more to ``reply_channel``. Failures only get logged:
    the request may have ended, and nothing more can be done for a front door that gives it up."""
    cancel = channel_messages.cancel(request_id, reply_channel, closed)
    try:
        if worker_channel is not None:
            await layer.send(worker_channel, cancel)
            return
        try:
            await layer.send(shared_channel, cancel)
        except ChannelFull:
            log.warning("the %s channel is full; cancel of %s sent to the workers' group only", shared_channel, request_id)
        await layer.group_send(WORKERS_GROUP, cancel)
    except Exception as error:  # noqa: BLE001
        log.warning("could not cancel request %s on its worker: %s", request_id, error)


def save_failed_run(recorder: RunRecorder, error: dict[str, Any]) -> str | None:
    """Saves the relayed run as failed; returns its id (None if it could not be saved). A worker
    that saved the run itself first (it ended it, then died) leaves its record, which stands: the
    recorder's one saving path writes a run once, whoever ends it (``playground.runs.recording``)."""
    return recorder.fail(error)


def relayed_recorder(request_id: str, record: dict[str, Any], started: dict[str, Any]) -> RunRecorder:
    """A recorder for a run the connection relays, saving under the run id and delete token its
    worker announced in ``started`` (the worker saves the run itself unless it dies first)."""
    recorder = RunRecorder(request_id, record)
    recorder.run_id, recorder.delete_token = started["run_id"], started["delete_token"]
    recorder.observe(started)
    return recorder
