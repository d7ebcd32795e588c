"""The messages the websocket consumer and the inference workers exchange over the channel layer.

There are five, each made by the constructor of the same name below, and a sixth for liveness
(``inference.heartbeat``, worker → consumer, made and documented in ``playground.liveness``):

- ``inference.request`` (consumer → the shared ``inference`` channel): ``reply_channel``,
  ``request_id``, ``quick`` (tokenizing: served beside generations, not behind them) and the
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

The Redis layer may now and then hand one request to two workers (channels_redis keeps a single
in-flight backup per channel, shared by every reader of ``inference``, and one reader's clean-up
can put back a message another has just taken). So ``queued``, ``event`` and ``finished`` name the
worker that sent them: the consumer keeps the first worker that acknowledged a request, sends the
other a cancel, and drops whatever that other worker sends.

Every message is plain data (strings, numbers, lists, dicts with string keys), as the Redis layer
needs.
"""

from __future__ import annotations

from typing import Any

from playground import frames


def request(job: frames.Job, reply_channel: str) -> dict[str, Any]:
    return {
        "type": "inference.request",
        "reply_channel": reply_channel,
        "request_id": job.request_id,
        "quick": isinstance(job, frames.Tokenize),
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
