"""The channel layer between the front doors (the websocket consumer, the HTTP API) and the
inference workers: every channel and group name, every message type and its constructor, and how a
typed job (``playground.wire.jobs``) travels as plain data. Nothing else spells a channel name.

Channels and groups:

- ``inference`` (``INFERENCE_CHANNEL``): generations, read by a worker only while it has room
  (``playground.worker.IntakeWorker``); requests wait there in line (``playground.edge.waiting_line``);
- ``inference-quick`` (``QUICK_CHANNEL``): tokenizing, inspecting, scoring, read by every worker all
  the time, so they never wait behind generations;
- per served model (``model_channel``): those two are SmolLM2's (the first catalogued model, the
  channels' names before there were several models); every other model has its own pair,
  ``inference-<id>`` and ``inference-quick-<id>``, read only by the workers that serve it, so a
  worker never takes a request for a model it does not serve and each model has its own line;
- ``inference-workers`` (``WORKERS_GROUP``): every worker that has taken a request (cancels of
  requests no worker acknowledged, pings to full workers);
- ``inference-line`` (``LINE_GROUP``): every connection with a generation waiting in line.

Messages:

- ``inference.request`` (front door → its model's ``inference`` channel, or ``inference-quick`` for a
  quick job): ``reply_channel``, ``request_id``, ``quick``, ``model`` (the served model's id), ``ticket`` (its submit time: its place in the
  waiting line) and the checked ``job`` as plain data (``job_to_dict``), which the worker rebuilds
  as the same typed job (``job_from_dict``);
- ``inference.queued`` (worker → front door): the worker's own ``worker_channel``, where cancels go;
- ``inference.event`` (worker → front door): one websocket event (``started``, ``token``, ``done``,
  ``error``, ...) to pass on as it is: as a dict in ``event``, or, for the per-token stream
  (``events.FRAMED_EVENTS``), already encoded as its text frame in ``frame`` with its ``event_type``
  (serialized once, by the worker; ``event_of`` gives either back);
- ``inference.finished`` (worker → front door): the request has had its last event;
- ``inference.cancel`` (front door → ``worker_channel``; for a request no worker has acknowledged,
  to its shared channel and the workers' group, and the worker that later receives it drops it);
  ``closed`` true when the front door itself has gone (the socket closed, the HTTP client went
  away): the worker then sends nothing more to that reply channel (no event, ``finished`` or
  heartbeat: nobody reads it) and still saves a run that had started as cancelled;
- ``inference.heartbeat`` (worker → front door): the ``[request_id, lease]`` pairs a worker still
  holds for that reply channel (``playground.wire.liveness``);
- ``inference.taken`` (worker → ``inference-line``): a worker took the request with this ticket off
  the shared channel, and frees rows this fast (``playground.edge.waiting_line``);
- ``inference.ping`` (web → ``inference`` and the workers' group) and its answer ``inference.pong``
  (worker → the ping's ``reply_channel``): who answers, its models, its load (``playground.edge.health``).

Every message about a request that a front door watches carries its ``lease`` token (added to
``inference.request`` by the watchdog; repeated by the worker on ``queued``, ``event`` and
``finished``), so that messages from a submission given up since are dropped.

``queued``, ``event`` and ``finished`` name the worker that sent them. Should one request ever reach
two workers (channels_redis' own layer did that now and then; ours,
``playground.wire.channel_layer.SingleTakeRedisChannelLayer``, does not), the front door keeps the first
worker that acknowledged it, sends the other a cancel, and drops whatever that other worker sends.

Every message is plain data (strings, numbers, lists, dicts with string keys), as the Redis layer
needs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from inference.decoding.request import GenerationRequest, chat_from_json, chat_to_json, split_params
from inference.model_catalog import DEFAULT_MODELS
from playground.wire.events import FRAMED_EVENTS, Frame
from playground.wire.jobs import Branch, Generate, Inspect, Job, Score, Tokenize, is_quick

INFERENCE_CHANNEL = "inference"
QUICK_CHANNEL = "inference-quick"
WORKERS_GROUP = "inference-workers"
LINE_GROUP = "inference-line"

REQUEST = "inference.request"
QUEUED = "inference.queued"
EVENT = "inference.event"
FINISHED = "inference.finished"
CANCEL = "inference.cancel"
HEARTBEAT = "inference.heartbeat"
TAKEN = "inference.taken"
PING = "inference.ping"
PONG = "inference.pong"
TO_FRONT_DOOR = frozenset({QUEUED, EVENT, FINISHED, HEARTBEAT, TAKEN})  # what a connection's channel receives


def model_channel(model: str | None, quick: bool) -> str:
    """The shared channel of a model's generations (``quick``: its tokenizing, inspecting, scoring);
    ``None`` is the first catalogued model's."""
    shared = QUICK_CHANNEL if quick else INFERENCE_CHANNEL
    return shared if model is None or model == DEFAULT_MODELS[0] else f"{shared}-{model}"


def channel_for(message: Mapping[str, Any]) -> str:
    """The shared channel an ``inference.request`` (or the cancel of one no worker took) goes to."""
    return model_channel(message.get("model"), bool(message.get("quick")))


def request(job: Job, reply_channel: str) -> dict[str, Any]:
    return {
        "type": REQUEST,
        "reply_channel": reply_channel,
        "request_id": job.request_id,
        "quick": is_quick(job),
        "model": job.model,
        "ticket": time.time(),
        "job": job_to_dict(job),
    }


def queued(request_id: str, worker_channel: str, lease: str | None) -> dict[str, Any]:
    return {"type": QUEUED, "request_id": request_id, "worker_channel": worker_channel, "lease": lease}


def event(
    request_id: str, websocket_event: dict[str, Any], lease: str | None, worker_channel: str | None = None
) -> dict[str, Any]:
    """A worker's event for the front door; a ``token`` event goes already encoded (``Frame``)."""
    message: dict[str, Any] = {"type": EVENT, "request_id": request_id, "lease": lease, "worker_channel": worker_channel}
    if websocket_event.get("type") in FRAMED_EVENTS:
        frame = Frame.of(websocket_event)
        return message | {"event_type": frame.type, "frame": frame.text}
    return message | {"event": websocket_event}


def event_of(message: Mapping[str, Any]) -> dict[str, Any] | Frame:
    """The websocket event an ``inference.event`` carries: a dict, or a ``Frame`` encoded by the worker."""
    if "frame" in message:
        return Frame(message["event_type"], message["request_id"], message["frame"])
    return message["event"]  # type: ignore[no-any-return]


def finished(request_id: str, lease: str | None, worker_channel: str | None = None) -> dict[str, Any]:
    return {"type": FINISHED, "request_id": request_id, "lease": lease, "worker_channel": worker_channel}


def from_another_worker(message: Mapping[str, Any], serving: str | None) -> bool:
    """Whether a worker's ``queued``, ``event`` or ``finished`` comes from a worker other than the
    one whose ``queued`` the front door accepted (``serving``): a request taken twice (see above)."""
    sender = message.get("worker_channel")
    return serving is not None and sender is not None and sender != serving


def cancel(request_id: str, reply_channel: str, closed: bool = False) -> dict[str, Any]:
    """``closed``: the front door has gone; nothing more may be sent to ``reply_channel``."""
    return {"type": CANCEL, "request_id": request_id, "reply_channel": reply_channel, "closed": closed}


def heartbeat(worker_channel: str, leases: list[list[str]], models: list[str] | None = None) -> dict[str, Any]:
    """``models``: the ids the worker serves (scale-out: which worker serves what)."""
    return {"type": HEARTBEAT, "worker_channel": worker_channel, "leases": leases, "models": list(models or [])}


def taken(ticket: float | None, freed_per_s: float, worker: str, channel: str = INFERENCE_CHANNEL) -> dict[str, Any]:
    """The worker's word to the line: it took the request with this ticket off ``channel`` (one
    model's line), and frees rows this fast."""
    return {"type": TAKEN, "ticket": ticket, "freed_per_s": freed_per_s, "worker": worker, "channel": channel}


def ping(reply_channel: str) -> dict[str, Any]:
    return {"type": PING, "reply_channel": reply_channel}


def pong(host: str, pid: int, load: dict[str, int], model: dict[str, Any], models: list[str] | None = None) -> dict[str, Any]:
    """A worker's answer to a ping; ``model`` is ``{"model_built": True, "model": name}`` or
    ``{"model_built": False, "model_error": why}`` (its default model's), ``models`` the ids it serves."""
    return {"type": PONG, "host": host, "pid": pid, "load": load, **model, "models": list(models or [])}


def job_to_dict(job: Job) -> dict[str, Any]:
    """A typed job as plain data (every parameter with its value; what the channel layer carries)."""
    if isinstance(job, Generate):
        return {
            "kind": "generate",
            "request_id": job.request_id,
            **job.request.to_json(),
            "save": job.save,
            "model": job.model,
            "branch": None
            if job.branch is None
            else {"parent_run": job.branch.parent_run, "branch_index": job.branch.branch_index},
        }
    if isinstance(job, Tokenize):
        return {"kind": "tokenize", **asdict(job), "chat": chat_to_json(job.chat)}
    if isinstance(job, Score):
        return {"kind": "score", **asdict(job), "chat": chat_to_json(job.chat)}
    return {
        "kind": "inspect",
        "request_id": job.request_id,
        "prompt": job.prompt,
        "mode": job.mode,
        "system": job.system,
        "prefix_tokens": list(job.prefix_tokens),
        "top_n": job.top_n,
        "variants": [{**sampling.to_dict(), **loop.to_dict()} for sampling, loop in job.variants],
        "chat": chat_to_json(job.chat),
        "model": job.model,
    }


def job_from_dict(data: Mapping[str, Any]) -> Job:
    """The typed job ``job_to_dict`` made. The fields are not parsed again as a client frame: a
    generation's request is rebuilt by ``GenerationRequest.from_json`` (its rules between values
    held when it was made), an inspection's variants split by the request's rule (``split_params``)
    and rebuilt by their own constructors."""
    kind = data["kind"]
    if kind in ("tokenize", "score"):
        fields = {k: v for k, v in data.items() if k not in ("kind", "chat")}
        return (Tokenize if kind == "tokenize" else Score)(**fields, chat=chat_from_json(data.get("chat")))
    if kind == "inspect":
        return Inspect(
            data["request_id"],
            data["prompt"],
            data["mode"],
            data["system"],
            tuple(data["prefix_tokens"]),
            tuple(split_params(variant) for variant in data["variants"]),
            data["top_n"],
            chat_from_json(data.get("chat")),
            data.get("model"),
        )
    request = GenerationRequest.from_json(data)
    branch = data.get("branch")
    return Generate(
        data["request_id"],
        request,
        None if branch is None else Branch(branch["parent_run"], branch["branch_index"]),
        data.get("save", True),
        data.get("model"),
    )
