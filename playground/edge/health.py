"""Liveness, readiness and metrics for probes, load balancers and Prometheus.

- ``GET /health``: liveness. Always ``200`` with ``"status": "ok"`` while the process answers HTTP,
  so a slow database or a busy worker never gets a web process restarted. The body also says what a
  client of the API wants to know (docs/openai-api.md): whether the model is built (``model``),
  whether an inference worker answers a ping within a second (``workers``, with its load when the
  worker reports one), and how many requests wait on the ``inference`` channel for a worker to take
  them (``queue.waiting``; null for a channel layer that cannot tell). The worker and queue facts
  are looked up at most every ``HEALTH_CACHE_S`` seconds, so frequent probes add no load.
- ``GET /ready``: readiness, ``200`` when every check passes and ``503`` otherwise, with a JSON
  body naming each check's result and time: the database answers ``SELECT 1``; a message makes a
  round trip through the channel layer; an inference worker answers a ping sent through the
  ``inference`` channel (and reports that its model is built). Each check has a short timeout.
- ``GET /metrics``: Prometheus' text format (``playground.edge.metrics``).

:class:`ProbeMiddleware` answers these paths before any other middleware: probes and scrapers reach
a process by its own address, which is not an allowed host, and over plain HTTP, which the
production settings would redirect to HTTPS. The paths leak nothing but counts; a reverse proxy
should not forward ``/metrics`` from the internet (docs/deploy.md).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

from inference.model_catalog import model_dir_for
from inference.model_dir import MANIFEST_FILE, ModelNotBuiltError, read_manifest
from playground.edge import metrics
from playground.edge.waiting_line import requests_in_line
from playground.wire import channel_messages, embedded
from playground.wire.channel_messages import INFERENCE_CHANNEL, WORKERS_GROUP

CHECK_TIMEOUT_S = 3.0


HEALTH_PING_TIMEOUT_S = 1.0
HEALTH_CACHE_S = 5.0
_health_cache: dict[str, Any] = {}


async def liveness(request: HttpRequest) -> HttpResponse:
    now = time.monotonic()
    if _health_cache.get("until", 0.0) <= now:
        _health_cache.update(facts=await _health_facts(), until=now + HEALTH_CACHE_S)
    return JsonResponse({"status": "ok", **_health_facts_now(), **_health_cache["facts"]})


def _health_facts_now() -> dict[str, Any]:
    """``model``: the default model's build; ``models``: every served model's id and whether it is built."""
    served = settings.INFERENCE["MODELS"]
    models = {model_id: (model_dir_for(model_id, served) / MANIFEST_FILE).is_file() for model_id in served}
    try:
        manifest = read_manifest(model_dir_for(served[0], served))
        return {"model": {"built": True, "name": manifest.get("model_name")}, "models": models}
    except (ModelNotBuiltError, ValueError, OSError) as error:
        return {"model": {"built": False, "error": str(error)}, "models": models}


async def _health_facts() -> dict[str, Any]:
    """Whether a worker answers a ping (within ``HEALTH_PING_TIMEOUT_S``), and the waiting requests."""
    try:
        answer = await asyncio.wait_for(_ping_worker(), HEALTH_PING_TIMEOUT_S)
        workers: dict[str, Any] = {"reachable": True, "host": answer.get("host"), "load": answer.get("load")}
    except Exception as error:  # noqa: BLE001 — no worker (or no answer in time) is a fact, not a failure
        workers = {"reachable": False, "error": f"{type(error).__name__}: {error}" if str(error) else type(error).__name__}
    try:
        waiting = await requests_in_line(get_channel_layer())
    except Exception:  # noqa: BLE001
        waiting = None
    return {"workers": workers, "queue": {"waiting": waiting}}


async def readiness(request: HttpRequest) -> HttpResponse:
    names = ("database", "channel_layer", "workers")
    results = await asyncio.gather(*(_timed(check()) for check in (_database, _channel_layer, _workers)))
    checks = dict(zip(names, results))
    ready = all(result["ok"] for result in results)
    return JsonResponse({"status": "ready" if ready else "not_ready", "checks": checks}, status=200 if ready else 503)


async def metrics_page(request: HttpRequest) -> HttpResponse:
    body, content_type = metrics.exposition()
    return HttpResponse(body, content_type=content_type)


PROBES: dict[str, Callable[[HttpRequest], Awaitable[HttpResponse]]] = {
    "/health": liveness,
    "/ready": readiness,
    "/metrics": metrics_page,
}


class ProbeMiddleware:
    """Answers the probe paths itself (GET or HEAD); counts every other response for the metrics."""

    async_capable = True
    sync_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(self.get_response):
            markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path)
        if probe is not None and request.method in ("GET", "HEAD"):
            response = await probe(request)
            response["Cache-Control"] = "no-store"
            return response
        response = await self.get_response(request)
        metrics.http_response(request.method or "", response.status_code)
        return response


async def _timed(check: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """Runs one check with the timeout; any failure becomes ``ok: false`` with its reason."""
    began = time.monotonic()
    try:
        result = {"ok": True} | await asyncio.wait_for(check, CHECK_TIMEOUT_S)
    except TimeoutError:
        result = {"ok": False, "error": f"no answer within {CHECK_TIMEOUT_S:g} s"}
    except Exception as error:  # noqa: BLE001 — a failed check is a result, not a crash
        result = {"ok": False, "error": f"{type(error).__name__}: {error}"}
    result["ms"] = round((time.monotonic() - began) * 1000, 1)
    return result


def _select_one() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"vendor": connection.vendor}


async def _database() -> dict[str, Any]:
    return await sync_to_async(_select_one)()


async def _channel_layer() -> dict[str, Any]:
    """A message sent to a fresh channel of this process comes back."""
    layer = get_channel_layer()
    channel = await layer.new_channel("health.")
    token = uuid.uuid4().hex
    await layer.send(channel, {"type": "health.echo", "token": token})
    message = await layer.receive(channel)
    if message.get("token") != token:
        raise RuntimeError("the channel layer returned another message")
    return {"backend": type(layer).__name__}


async def _workers() -> dict[str, Any]:
    """One inference worker answers a ping, with its model built."""

    answer = await _ping_worker()
    if not answer.get("model_built"):
        raise RuntimeError(f"worker {answer.get('host')} has no model: {answer.get('model_error')}")
    return {"answered_by": {key: answer.get(key) for key in ("host", "pid", "model")}}


async def _ping_worker() -> dict[str, Any]:
    """The first answer to a ping sent to the shared ``inference`` channel (a worker with room reads
    it) and to the workers' group (a full worker, which leaves the channel alone, hears it there)."""
    embedded.ensure_worker()
    layer = get_channel_layer()
    reply_channel = await layer.new_channel("health.")
    await layer.send(INFERENCE_CHANNEL, channel_messages.ping(reply_channel))
    await layer.group_send(WORKERS_GROUP, channel_messages.ping(reply_channel))
    return await layer.receive(reply_channel)
