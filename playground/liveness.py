"""Worker liveness: heartbeats from the workers, a watchdog in each websocket connection.

A request travels to a worker over the channel layer, and nothing there says when that worker
dies: a ``runworker`` killed mid-stream simply stops talking. So, on top of the five messages
described in ``playground.worker``:

- every request a connection sends carries a fresh ``lease`` token; the worker repeats it on every
  message about that request (``inference.queued``, ``inference.event``, ``inference.finished``);
- while a worker holds requests (queued or running) it sends each of their connections an
  ``inference.heartbeat`` every ``HEARTBEAT_SECONDS``: its ``worker_channel`` and the
  ``[request_id, lease]`` pairs it holds for that connection;
- each connection's ``Watchdog`` renews a request's lease on every message from its worker. A
  request a worker acknowledged and started but has not mentioned for ``LEASE_SECONDS`` ends with
  an ``error`` of code ``worker_lost``; a request no worker acknowledged within ``ACK_TIMEOUT_SECONDS`` ends
  with ``no_worker``, unless a worker answers a ping to the workers' group (then every worker is
  full, and the request waits in the channel for room, checked again after as long). Either way the error reaches the client as if a worker had sent it, so the
  request id is free again; a worker that is alive after all is told to cancel, and whatever it
  still sends under the old lease is dropped, even when the client reuses the id;
- a request its worker took but never started (it waited in that worker's backlog) is not failed
  when the worker is lost: it goes back to the shared channel under a new lease, same request id,
  and another worker serves it;
- a run that had started is saved as failed with the tokens the client saw, under the run id its
  ``started`` announced: the connection relays every event, so it records them with the same
  ``RunRecorder`` the worker uses.

The settings live in ``settings.WORKER_LIVENESS``; ``README.md`` (Scale-out) explains them.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from channels.db import database_sync_to_async
from django.conf import settings

from playground import channel_messages, waiting_line
from playground.events import FINAL_EVENTS

if TYPE_CHECKING:
    from playground.runs.recording import RunRecorder

log = logging.getLogger(__name__)

HEARTBEAT = "inference.heartbeat"
WORKER_LOST = "worker_lost"
NO_WORKER = "no_worker"
BUSY = "busy"
BUSY_RETRY_AFTER_SECONDS = 5.0  # the retry hint of a request refused because every worker stayed full
# A request waits in the channel for a full worker's room at most settings.WAITING_LINE's
# MAX_WAIT_SECONDS (``waiting_line.max_wait_seconds``); the channel layer keeps messages a margin
# longer (``channel_layer.message_expiry``), so it is refused with ``busy`` before the layer drops it.
ALIVE_PING_SECONDS = 1.0  # how long a watchdog waits for a worker's answer before calling a request unserved


@dataclass(frozen=True)
class Timing:
    """How often workers beat, and how long a connection waits before it gives a request up."""

    heartbeat_seconds: float  # a worker holding requests beats this often
    lease_seconds: float  # an acknowledged request whose worker is silent this long is lost
    ack_timeout_seconds: float  # a request no worker acknowledged within this is refused

    def __post_init__(self) -> None:
        if not self.heartbeat_seconds > 0:
            raise ValueError(f"WORKER_LIVENESS HEARTBEAT_SECONDS must be above 0, got {self.heartbeat_seconds}")
        if not self.lease_seconds >= 2 * self.heartbeat_seconds:
            raise ValueError(
                f"WORKER_LIVENESS LEASE_SECONDS ({self.lease_seconds}) must be at least twice HEARTBEAT_SECONDS "
                f"({self.heartbeat_seconds}): one late heartbeat must not lose a request"
            )
        if not self.ack_timeout_seconds > 0:
            raise ValueError(f"WORKER_LIVENESS ACK_TIMEOUT_SECONDS must be above 0, got {self.ack_timeout_seconds}")

    @property
    def watch_interval(self) -> float:
        """How often a watchdog looks at its leases: a lost worker is noticed within
        ``lease_seconds + watch_interval`` of its last word."""
        return self.lease_seconds / 10

    @classmethod
    def from_settings(cls) -> Timing:
        config = settings.WORKER_LIVENESS
        return cls(float(config["HEARTBEAT_SECONDS"]), float(config["LEASE_SECONDS"]), float(config["ACK_TIMEOUT_SECONDS"]))


# ---------------------------------------------------------------------------------------------
# Worker side


class HeldRequest(Protocol):
    """What a worker knows of a request it holds (``playground.worker.Job`` is one)."""

    request_id: str
    reply_channel: str
    lease: str | None


def heartbeats(worker_channel: str, held: Iterable[HeldRequest]) -> dict[str, dict[str, Any]]:
    """reply channel → the heartbeat message naming the requests this worker holds for it."""
    messages: dict[str, dict[str, Any]] = {}
    for request in held:
        if request.lease is None:  # from a connection that does not watch
            continue
        message = messages.setdefault(request.reply_channel, {"type": HEARTBEAT, "worker_channel": worker_channel, "leases": []})
        message["leases"].append([request.request_id, request.lease])
    return messages


class WorkerHeartbeat:
    """Beats for a worker while it holds requests; stops when it holds none, starts on the next."""

    def __init__(self, held: Callable[[], Iterable[HeldRequest]]) -> None:
        self._held = held
        self._task: asyncio.Future[None] | None = None

    def ensure_running(self, channel_layer: Any, worker_channel: str) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._beat(channel_layer, worker_channel, Timing.from_settings()))

    async def _beat(self, channel_layer: Any, worker_channel: str, timing: Timing) -> None:
        while True:
            await asyncio.sleep(timing.heartbeat_seconds)
            messages = heartbeats(worker_channel, list(self._held()))
            if not messages:
                return
            for reply_channel, message in messages.items():
                try:
                    await channel_layer.send(reply_channel, message)
                except Exception as error:  # noqa: BLE001 — a full or gone connection; the others still hear
                    log.warning("could not send a heartbeat to %s: %s", reply_channel, error)


# ---------------------------------------------------------------------------------------------
# Connection side


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
            event = message["event"]
            self._record(lease, event)
            if event["type"] in FINAL_EVENTS:
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

    def stop(self) -> None:
        """The connection closed: nothing to watch any more (its requests were cancelled)."""
        if self._task is not None:
            self._task.cancel()
        self.leases.clear()

    def _renew(self, lease: Lease) -> None:
        if lease.acknowledged:
            lease.expires_at = self.clock() + self.timing.lease_seconds

    def _record(self, lease: Lease, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "started" and event.get("run_id"):
            lease.recorder = relayed_recorder(lease.request_id, lease.record or {}, event)
        elif kind in ("token", "beam_step") and lease.recorder is not None:
            lease.recorder.observe(event)

    async def _watch(self) -> None:
        """Looks at the leases every ``watch_interval`` while there are any."""
        interval = self.timing.watch_interval
        expected = self.clock() + interval
        while self.leases:
            alive: bool | None = None  # whether some worker answers a ping: asked at most once a round
            await asyncio.sleep(interval)
            now = self.clock()
            stalled = now - expected
            if stalled > interval:
                # This event loop did not run for a while: the silence was ours, not the workers'.
                for lease in self.leases.values():
                    lease.expires_at += stalled
                    lease.ack_deadline += stalled
            expected = now + interval
            for lease in list(self.leases.values()):
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
                        alive = await self._workers_alive() if alive is None else alive
                        waited = now - lease.submitted_at
                        max_wait = waiting_line.max_wait_seconds()
                        if alive and waited < max_wait:  # every worker is full: it waits for room
                            lease.ack_deadline = min(now + self.timing.ack_timeout_seconds, lease.submitted_at + max_wait)
                            continue
                        if alive:  # the layer would drop it soon: refused with a hint rather than lost
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

    async def _resubmit(self, lease: Lease) -> None:
        """A worker took the request and died before starting it: it goes back to the shared channel
        under a new lease (same request id), at the place in line it had (the Redis layer's
        ``send_in_place``), for whichever worker has room; the dead one, should it come back, is
        told to drop it and is not listened to any more."""
        await self._cancel_quietly(lease)
        token = secrets.token_hex(8)
        now = self.clock()
        lease.token, lease.acknowledged, lease.worker_channel = token, False, None
        lease.expires_at, lease.ack_deadline = math.inf, now + self.timing.ack_timeout_seconds
        lease.message = (lease.message or {}) | {"lease": token}
        self.resubmitted(lease.request_id)
        log.warning("request %s of %s: its worker was lost before starting it; resubmitted", lease.request_id, self.reply_channel)
        ticket = lease.message.get("ticket")
        if isinstance(ticket, int | float) and hasattr(self.channel_layer, "send_in_place"):
            await self.channel_layer.send_in_place(lease.channel, lease.message, float(ticket))  # its old place in line
        else:
            await self.channel_layer.send(lease.channel, lease.message)

    async def _workers_alive(self) -> bool:
        """Whether an inference worker answers a ping sent to the workers' group within
        ``ALIVE_PING_SECONDS``: a request no worker has taken is then waiting for a full worker's
        room (workers read the shared channel only when they have room), not lost."""
        from playground.health import PING
        from playground.worker import WORKERS_GROUP  # (the worker imports this module)

        try:
            reply_channel = await self.channel_layer.new_channel("alive.")
            await self.channel_layer.group_send(WORKERS_GROUP, {"type": PING, "reply_channel": reply_channel})
            await asyncio.wait_for(self.channel_layer.receive(reply_channel), ALIVE_PING_SECONDS)
        except Exception:  # noqa: BLE001 — no answer (a timeout) or no layer: nobody alive to wait for
            return False
        return True

    async def _give_up(self, lease: Lease, code: str, message: str, retry_after: float | None = None) -> None:
        if self.leases.get(lease.request_id) is not lease:
            return  # it ended meanwhile
        await self._cancel_quietly(lease)
        error: dict[str, Any] = {
            "type": "error",
            "request_id": lease.request_id,
            "error": {"code": code, "message": message, "param": None},
        }
        if retry_after is not None:
            error["error"]["retry_after"] = retry_after
        if lease.recorder is not None:
            run_id = await database_sync_to_async(save_failed_run)(lease.recorder, error)
            if run_id is not None:
                error["run_id"] = run_id
        if self.leases.get(lease.request_id) is not lease:
            return  # its worker spoke up while the run was being saved: its own end stands
        log.warning("request %s of %s: %s", lease.request_id, self.reply_channel, code)
        await self.deliver(channel_messages.event(lease.request_id, error, lease.token))

    async def _cancel_quietly(self, lease: Lease) -> None:
        """Tells a worker that holds the request after all to drop it, and one that takes it later
        to skip it; neither may exist, so failures only get logged."""
        from playground.worker import WORKERS_GROUP  # (the worker imports this module)

        cancel = channel_messages.cancel(lease.request_id, self.reply_channel)
        try:
            if lease.worker_channel is not None:
                await self.channel_layer.send(lease.worker_channel, cancel)
            else:
                await self.channel_layer.send(lease.channel, cancel)
                await self.channel_layer.group_send(WORKERS_GROUP, cancel)
        except Exception as error:  # noqa: BLE001
            log.warning("could not cancel request %s on its worker: %s", lease.request_id, error)


def save_failed_run(recorder: RunRecorder, error: dict[str, Any]) -> str | None:
    """Saves the relayed run as failed; returns its id (None if it could not be saved). A worker
    that died just after saving the run itself leaves its record, which stands."""
    from playground.runs.models import Run

    if Run.objects.filter(pk=recorder.run_id).exists():
        return recorder.run_id
    return recorder.fail(error)


def relayed_recorder(request_id: str, record: dict[str, Any], started: dict[str, Any]) -> RunRecorder:
    """A recorder for a run the connection relays, saving under the run id and delete token its
    worker announced in ``started`` (the worker saves the run itself unless it dies first)."""
    from playground.runs.recording import RunRecorder  # the app registry is ready by now

    recorder = RunRecorder(request_id, record)
    recorder.run_id, recorder.delete_token = started["run_id"], started["delete_token"]
    recorder.observe(started)
    return recorder
