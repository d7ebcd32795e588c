"""The messages the websocket consumer and the inference workers exchange over the channel layer.

There are five, each made by the constructor of the same name below, and a sixth for liveness
(``inference.heartbeat``, worker → consumer, made and documented in ``playground.liveness``) and
a seventh for the waiting line (``inference.taken``, worker → the ``inference-line`` group, made
and documented in ``playground.waiting_line``):

- ``inference.request`` (consumer → the shared ``inference`` channel, or ``inference-quick`` for a
  quick job): ``reply_channel``, ``request_id``, ``quick`` (tokenizing, inspecting, scoring: served
  beside generations, not behind them), ``ticket`` (its submit time: its place in the waiting
  line, ``playground.waiting_line``) and the
  checked ``job`` as its normalized dict (``frames.job_to_dict``: a generate, tokenize or inspect
  request), which the worker rebuilds as the same typed job (``frames.job_from_dict``);
- ``inference.queued`` (worker → consumer): the worker's own ``worker_channel``, where cancels go;
- ``inference.event`` (worker → consumer): one websocket event (``started``, ``token``, ``done``,
  ``error``, ...) to pass on as it is;
- ``inference.finished`` (worker → consumer): the request has had its last event;
- ``inference.cancel`` (consumer → ``worker_channel``; for a request no worker has acknowledged
  when its connection closes, to the ``inference`` channel and the ``inference-workers`` group,
  and the worker that later receives the request drops it).

Every message about a request that the consumer watches carries its ``lease`` token (added to
``inference.request`` by the consumer's watchdog; repeated by the worker on ``queued``, ``event``
and ``finished``), so that messages from a submission given up since are dropped.

``queued``, ``event`` and ``finished`` name the worker that sent them. Should one request ever reach
two workers (channels_redis' own layer did that now and then; ours,
``playground.channel_layer.SingleTakeRedisChannelLayer``, does not), the consumer keeps the first
worker that acknowledged it, sends the other a cancel, and drops whatever that other worker sends.

Every message is plain data (strings, numbers, lists, dicts with string keys), as the Redis layer
needs.
"""

from __future__ import annotations

import time
from typing import Any

from playground import frames

INFERENCE_CHANNEL = "inference"  # generations, read by a worker only while it has room
# tokenizing, inspecting, scoring: read by every worker all the time, so they never wait behind generations
QUICK_CHANNEL = "inference-quick"

QUICK_JOBS = (frames.Tokenize, frames.Inspect, frames.Score)  # need no decode slot: served beside generations


def is_quick(job: frames.Job) -> bool:
    return isinstance(job, QUICK_JOBS)


def channel_for(message: dict[str, Any]) -> str:
    """The shared channel an ``inference.request`` (or the cancel of one no worker took) goes to."""
    return QUICK_CHANNEL if message.get("quick") else INFERENCE_CHANNEL


def job_channel(job: frames.Job) -> str:
    """The shared channel ``job``'s request goes to (what ``channel_for`` reads off its message)."""
    return QUICK_CHANNEL if is_quick(job) else INFERENCE_CHANNEL


def request(job: frames.Job, reply_channel: str) -> dict[str, Any]:
    return {
        "type": "inference.request",
        "reply_channel": reply_channel,
        "request_id": job.request_id,
        "quick": is_quick(job),
        "ticket": time.time(),
        "job": frames.job_to_dict(job),
    }


def queued(request_id: str, worker_channel: str, lease: str | None) -> dict[str, Any]:
    return {"type": "inference.queued", "request_id": request_id, "worker_channel": worker_channel, "lease": lease}


def event(
    request_id: str, websocket_event: dict[str, Any], lease: str | None, worker_channel: str | None = None
) -> dict[str, Any]:
    return {
        "type": "inference.event",
        "request_id": request_id,
        "lease": lease,
        "worker_channel": worker_channel,
        "event": websocket_event,
    }


def finished(request_id: str, lease: str | None, worker_channel: str | None = None) -> dict[str, Any]:
    return {"type": "inference.finished", "request_id": request_id, "lease": lease, "worker_channel": worker_channel}


def from_another_worker(message: dict[str, Any], serving: str | None) -> bool:
    """Whether a worker's ``event`` or ``finished`` comes from a worker other than the one whose
    ``queued`` the consumer accepted (``serving``): a request taken twice (see above)."""
    sender = message.get("worker_channel")
    return serving is not None and sender is not None and sender != serving


def cancel(request_id: str, reply_channel: str) -> dict[str, Any]:
    return {"type": "inference.cancel", "request_id": request_id, "reply_channel": reply_channel}
