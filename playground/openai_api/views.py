"""The ``/v1/`` endpoints: completions, chat completions and the model list (docs/openai-api.md).

Each request is parsed into the same typed job as a websocket ``generate`` (``translate``), sent to
a worker over the channel layer (``worker_call``), and answered from that run's events
(``shapes``): one JSON body, or Server-Sent Events with ``stream: true``. The answer waits for the
run's first event, so a request the worker refuses (a prompt too long for the context, no worker,
a full queue) gets its HTTP status even when streamed; a streamed request still waiting in line
after ``SSE_KEEPALIVE_SECONDS`` gets its stream then, with SSE comment lines until its run starts. A client that disconnects cancels its
generation: Django's ASGI handler cancels the view (or the streaming response's iteration) on
``http.disconnect``, and the call's ``close()`` sends the worker ``inference.cancel``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any, NamedTuple

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from inference.model_catalog import CATALOG, describe, model_dir_for, resolve
from inference.model_dir import MANIFEST_FILE
from playground.edge import frames
from playground.openai_api import auth
from playground.openai_api.errors import ApiError, from_event, not_found
from playground.openai_api.shapes import Responder, echo_only
from playground.openai_api.translate import ApiRequest, Kind, translate
from playground.openai_api.worker_call import WorkerCall

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024  # as a websocket frame
JSON_TYPE = "application/json"  # the one body type read (with any parameters, e.g. charset); none given: read as JSON
KEEPALIVE_COMMENT = b": waiting for a worker\n\n"  # an SSE comment: clients skip it, proxies see traffic


class ServedModel(NamedTuple):
    """What the API says about a served model's build, read from its manifest."""

    name: str  # the model's id (inference.model_catalog)
    fingerprint: str  # the manifest's sha256: every response's ``system_fingerprint``
    built: int  # the manifest's build time
    end_ids: frozenset[int]  # the end-of-sequence token ids (a chat's ``<|im_end|>`` is not content)


def served_models() -> list[str]:
    """The ids of the models this server serves, the default first (``PLAYGROUND_MODELS``)."""
    return list(settings.INFERENCE["MODELS"])


def served_model(model_id: str | None = None) -> ServedModel:
    """A served model's build (None: the default model's); 503 ``model_not_built`` without one."""
    served = served_models()
    model_id = model_id or served[0]
    path = model_dir_for(model_id, served) / MANIFEST_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ApiError(503, f"{model_id} is not built on this server", None, "model_not_built", "service_unavailable") from None
    manifest = json.loads(data)
    end_ids = frozenset(int(i) for i in manifest["special_tokens"]["eos_token_ids"])
    return ServedModel(model_id, hashlib.sha256(data).hexdigest(), int(path.stat().st_mtime), end_ids)


def api_view(*methods: str):
    """An async view of the API: CSRF-exempt (clients send no cookies), CORS for configured origins,
    optional API keys, its methods only, and every ``ApiError`` answered in OpenAI's shape."""

    def wrap(view):
        @csrf_exempt
        async def handler(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method == "OPTIONS":
                return auth.with_cors(request, auth.preflight(request, methods))
            try:
                if request.method not in methods:
                    raise ApiError(
                        405, f"{request.method} is not allowed here; use {' or '.join(methods)}", None, "method_not_allowed"
                    )
                await auth.check_api_key(request)
                response = await view(request, *args, **kwargs)
            except ApiError as error:
                response = error.response()
            except Exception:  # noqa: BLE001 — a client of the API gets OpenAI's shape even for our faults
                log.exception("%s %s failed", request.method, request.path)
                response = ApiError(500, "the server failed on this request", None, "server_error", "server_error").response()
            return auth.with_cors(request, response)

        handler.__name__ = view.__name__
        handler.__doc__ = view.__doc__
        return handler

    return wrap


@api_view("GET")
async def models(request: HttpRequest) -> HttpResponse:
    """``GET /v1/models``: the models this server serves, the default first."""
    return JsonResponse({"object": "list", "data": [_model_object(model_id) for model_id in served_models()]})


@api_view("GET")
async def model(request: HttpRequest, model_id: str) -> HttpResponse:
    """``GET /v1/models/<id>`` (the id or the manifest's model_name)."""
    found = resolve(model_id, served_models())
    if found is None:
        raise not_found(f"the model {frames.excerpt(model_id)} does not exist", "model", "model_not_found")
    return JsonResponse(_model_object(found))


def _model_object(model_id: str) -> dict[str, Any]:
    """One ``/v1/models`` entry: OpenAI's fields and ours under ``playground`` (docs/openai-api.md)."""
    served = served_models()
    model_dir = model_dir_for(model_id, served)
    facts = describe(model_id, model_dir)
    manifest = model_dir / MANIFEST_FILE
    extension = {
        "model_name": facts["model_name"],
        "display_name": facts["display_name"],
        "kind": facts["kind"],
        "variant": facts["variant"],
        "kernels": facts["kernels"],
        "license": facts["license"],
        "context_length": facts["context_window"],
        "vocab_size": facts["vocab_size"],
        "chat": facts["chat"],
        "default": model_id == served[0],
        "built": facts["built"],
    }
    return {
        "id": model_id,
        "object": "model",
        "created": int(manifest.stat().st_mtime) if manifest.is_file() else 0,
        "owned_by": CATALOG[model_id].owned_by,
        "playground": extension,
    }


@api_view("POST")
async def completions(request: HttpRequest) -> HttpResponse:
    """``POST /v1/completions``."""
    return await _generate(request, "completion")


@api_view("POST")
async def chat_completions(request: HttpRequest) -> HttpResponse:
    """``POST /v1/chat/completions``."""
    return await _generate(request, "chat")


async def unknown_route(request: HttpRequest, path: str = "") -> HttpResponse:
    """Any other path under ``/v1/``: a 404 in OpenAI's shape."""
    response = not_found(
        f"no such endpoint: {request.method} {frames.excerpt(request.path)[1:-1]}", None, "unknown_url"
    ).response()
    return auth.with_cors(request, response)


unknown_route = csrf_exempt(unknown_route)


def _read_body(request: HttpRequest) -> Any:
    if request.content_type and request.content_type != JSON_TYPE:  # the media type, lowercased, parameters apart
        header = frames.excerpt(request.META.get("CONTENT_TYPE", ""))
        raise ApiError(
            400,
            f"unsupported content type {header}: this endpoint reads only {JSON_TYPE} bodies",
            None,
            "unsupported_content_type",
        )
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ApiError(413, f"the request body is over {MAX_BODY_BYTES} bytes", None, "request_too_large")
    try:
        body = request.body
    except Exception:  # noqa: BLE001 — Django's own size limit (RequestDataTooBig)
        raise ApiError(413, f"the request body is over {MAX_BODY_BYTES} bytes", None, "request_too_large") from None
    if len(body) > MAX_BODY_BYTES:
        raise ApiError(413, f"the request body is over {MAX_BODY_BYTES} bytes", None, "request_too_large")
    try:
        return frames.parse_json(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise ApiError(400, f"the request body is not valid JSON: {error}", None, "invalid_json") from None


async def _generate(request: HttpRequest, kind: Kind) -> HttpResponse:
    api = translate(_read_body(request), kind, served_models())
    served = served_model(api.model)
    client = request.META.get("REMOTE_ADDR") or "unknown"
    scores = None if api.score is None else await _score(api, client)
    if not api.generate:
        whole, chunks = echo_only(api, scores or {"tokens": []}, served.fingerprint)
        if not api.stream:
            return JsonResponse(whole)
        return _event_stream(_replay([*chunks, "[DONE]"]))
    call = WorkerCall(api.job, client)
    streaming = False
    permalink = lambda run_id: request.build_absolute_uri(reverse("runs:run", args=[run_id]))  # noqa: E731
    first: asyncio.Future[dict[str, Any]] | None = None
    try:
        await call.submit()
        first = asyncio.ensure_future(call.next_event())
        if api.stream:
            # a run that starts soon (or is refused) answers with its own status; one still
            # waiting in line after SSE_KEEPALIVE_SECONDS gets its stream now, kept alive
            await asyncio.wait({first}, timeout=settings.OPENAI_API["SSE_KEEPALIVE_SECONDS"])
            if not first.done():
                streaming = True
                return _streamed(
                    _sse_after_wait(call, first, lambda start: Responder(api, start, permalink, served.end_ids, scores), api),
                    call,
                )
        start = await first
        if start.get("type") != "started":
            raise from_event(start, api.param_names)
        responder = Responder(api, start, permalink, served.end_ids, scores)
        if api.stream:
            streaming = True
            return _streamed(_sse(call, responder, api), call)
        return JsonResponse(await _collect(call, responder, api))
    finally:
        if not streaming:
            if first is not None:
                first.cancel()
            await call.close()


def _streamed(events: AsyncIterator[bytes], call: WorkerCall) -> StreamingHttpResponse:
    # A client gone before the stream's first chunk: Django drops the response without iterating
    # it, so the stream's own clean-up never runs; this one does.
    weakref.finalize(events, call.close_soon)
    return _event_stream(events)


async def _score(api: ApiRequest, client: str) -> dict[str, Any]:
    """The prompt's own log-probabilities (a ``score`` job on a worker), for ``echo`` with ``logprobs``."""
    assert api.score is not None
    call = WorkerCall(api.score, client)
    try:
        await call.submit()
        answer = await call.next_event()
        while answer.get("type") not in ("prompt_scores", "error"):
            answer = await call.next_event()  # (nothing else is expected before its answer)
        if answer["type"] == "error":
            raise from_event(answer, api.param_names)
        return answer
    finally:
        await call.close()


def _event_stream(chunks: AsyncIterator[bytes]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a proxy must pass each event on at once
    return response


async def _replay(chunks: list[dict[str, Any] | str]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield _sse_event(chunk)


async def _collect(call: WorkerCall, responder: Responder, api: ApiRequest) -> dict[str, Any]:
    async for event in call.stream():
        kind = event.get("type")
        if kind == "token":
            responder.observe(event)
        elif kind == "done":
            return responder.complete(event)
        elif kind == "error":
            raise from_event(event, api.param_names)
    raise ApiError(500, "the run ended without its result", None, "server_error", "server_error")


def _sse_event(data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"data: {text}\n\n".encode()


async def _sse_after_wait(
    call: WorkerCall, first: asyncio.Future[dict[str, Any]], responder_for: Callable[[dict[str, Any]], Responder], api: ApiRequest
) -> AsyncIterator[bytes]:
    """The stream of a request still waiting for a worker's room: an SSE comment line every
    ``SSE_KEEPALIVE_SECONDS`` until its run starts, then the run as ``_sse`` streams it. A refusal
    after the headers went out (``busy`` at the longest wait, ``no_worker``) comes as an ``error``
    object, as an error during a stream does."""
    try:
        yield KEEPALIVE_COMMENT
        while not first.done():
            await asyncio.wait({first}, timeout=settings.OPENAI_API["SSE_KEEPALIVE_SECONDS"])
            if not first.done():
                yield KEEPALIVE_COMMENT
        start = first.result()
        if start.get("type") != "started":
            yield _sse_event(from_event(start, api.param_names).body())
            yield _sse_event("[DONE]")
            return
        async for chunk in _sse(call, responder_for(start), api):
            yield chunk
    finally:
        first.cancel()
        await asyncio.shield(call.close())


async def _sse(call: WorkerCall, responder: Responder, api: ApiRequest) -> AsyncIterator[bytes]:
    """The run as OpenAI streams it: ``data: {chunk}`` events, then ``data: [DONE]``. An error
    after the stream began is sent as an ``error`` object (the official clients raise it)."""
    try:
        for chunk in responder.opening_chunks():
            yield _sse_event(chunk)
        async for event in call.stream():
            kind = event.get("type")
            if kind == "token":
                yield _sse_event(responder.token_chunk(event))
            elif kind == "done":
                for chunk in responder.closing_chunks(event):
                    yield _sse_event(chunk)
            elif kind == "error":
                yield _sse_event(from_event(event, api.param_names).body())
        yield _sse_event("[DONE]")
    finally:
        await asyncio.shield(call.close())
