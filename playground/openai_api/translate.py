"""An OpenAI request body → our ``generate`` frame → the same ``frames`` parser as the websocket.

One parameter vocabulary: OpenAI's names that we share (``temperature``, ``top_p``, ``max_tokens``,
``n``, ``stop``, ``seed``, ``logit_bias``, ``frequency_penalty``, ``presence_penalty``) are our own
``params`` keys, and every other key of ours (``top_k``, ``min_p``, DRY, XTC, mirostat,
``sampler_order``, ...) is accepted at the top level, as llama.cpp's and vLLM's servers accept
theirs. OpenAI's ``response_format`` becomes our ``grammar`` (``response_format``). The frame is then checked by ``frames.parse_client_message``: one validation, one set of
ranges, whose errors name the body's field.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from inference.decoding.loop_params import LoopParams
from inference.model_catalog import resolve
from inference.sampling import SamplingParams
from playground.edge import frames, strict_json
from playground.openai_api import response_format
from playground.openai_api.errors import ApiError, from_event, not_found
from playground.wire.jobs import SPECULATIVE

Kind = Literal["completion", "chat"]

# OpenAI's defaults where its API defines one and the page's differs (docs/openai-api.md).
COMPLETION_MAX_TOKENS = 16  # /v1/completions; chat takes ours (LoopParams' default) as OpenAI sets none
MAX_COMPLETION_LOGPROBS = frames.TOP_N[1]  # OpenAI allows 5; our alternatives go to 20
MAX_TOP_LOGPROBS = frames.TOP_N[1]

# ``speculative``: the websocket's ``params.speculative`` (docs/speculative.md), on both endpoints
OUR_PARAMS = SamplingParams.field_names() | LoopParams.field_names() | {SPECULATIVE}
SHARED = frozenset(
    {"model", "stream", "stream_options", "n", "stop", "seed", "user", "save", "top_n", "watch", response_format.FIELD}
)
COMPLETION_KEYS = SHARED | {"prompt", "logprobs", "echo", "best_of", "suffix"}
CHAT_KEYS = SHARED | {
    "messages",
    "logprobs",
    "top_logprobs",
    "max_completion_tokens",
    "continue_final_message",
    "add_generation_prompt",
}
# OpenAI's optional fields, for which its clients may send null meaning "not given".
NULL_MEANS_ABSENT = frozenset(
    {
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "n",
        "stop",
        "logit_bias",
        "frequency_penalty",
        "presence_penalty",
        "logprobs",
        "top_logprobs",
        "echo",
        "stream",
        "stream_options",
        "suffix",
        "best_of",
        "response_format",
    }
)
IGNORED = frozenset({"user", "store", "metadata", "service_tier", "parallel_tool_calls"})  # accepted, no effect here
UNSUPPORTED = {
    "tools": "tools and function calling are not supported",
    "tool_choice": "tools and function calling are not supported",
    "functions": "tools and function calling are not supported",
    "function_call": "tools and function calling are not supported",
    "audio": "audio output is not supported",
    "modalities": "only text is supported",
    "prediction": "predicted outputs are not supported",
    "web_search_options": "web search is not supported",
    "reasoning_effort": "this model does not reason separately",
}
# Our frame's field → the body's, for error messages' ``param``.
COMPLETION_NAMES = {"top_n": "logprobs", "prompt": "prompt"}
CHAT_NAMES = {"top_n": "top_logprobs"}


@dataclass(frozen=True)
class ApiRequest:
    """What one HTTP request asks for: the typed job for a worker and how to answer."""

    kind: Kind
    job: frames.Generate
    model: str  # the served model's id (the response's ``model``)
    stream: bool
    include_usage: bool
    logprobs: int | None  # completions: how many top alternatives; chat: top_logprobs (None: no logprobs)
    echo: str | None  # completions with echo: the prompt text put in front of each choice
    param_names: dict[str, str]
    score: frames.Score | None = None  # echo with logprobs: the prompt's own log-probabilities first
    generate: bool = True  # false: echo with max_tokens 0, the prompt scored and nothing generated


def translate(body: Any, kind: Kind, served_models: Sequence[str]) -> ApiRequest:
    """Checks the body and turns it into our job for the model it names (one of ``served_models``,
    by id or manifest name); raises ``ApiError`` naming the field at fault."""
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object", None, "invalid_json")
    if (deep := strict_json.too_deep(body)) is not None:  # before any value is compared or quoted
        raise ApiError(400, strict_json.message(deep), deep or None, strict_json.CODE)
    body = {key: value for key, value in body.items() if not (value is None and key in NULL_MEANS_ABSENT)}
    names = dict(CHAT_NAMES if kind == "chat" else COMPLETION_NAMES)
    for key, why in UNSUPPORTED.items():
        if body.get(key) not in (None, [], {}):
            raise ApiError(400, f"{key}: {why} by this server", key, "unsupported_parameter")
    known = (CHAT_KEYS if kind == "chat" else COMPLETION_KEYS) | OUR_PARAMS | IGNORED | set(UNSUPPORTED)
    unknown = sorted(set(body) - known)
    if unknown:
        raise ApiError(400, f"unknown parameter {frames.excerpt(unknown[0])}", unknown[0], "unknown_parameter")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError(400, "model is required: the id GET /v1/models lists", "model", "missing_field")
    model_id = resolve(model, served_models)
    if model_id is None:
        raise not_found(
            f"the model {frames.excerpt(model)} does not exist; this server serves {', '.join(served_models)}",
            "model",
            "model_not_found",
        )
    stream = _flag(body, "stream")
    stream_options = body.get("stream_options")
    include_usage = False
    if stream_options is not None:
        if not stream:
            raise ApiError(400, "stream_options is only allowed when stream is true", "stream_options")
        if not isinstance(stream_options, dict) or set(stream_options) - {"include_usage", "include_obfuscation"}:
            raise ApiError(400, "stream_options must be an object with include_usage", "stream_options")
        include_usage = _flag(stream_options, "include_usage", "stream_options.include_usage")
    params = {key: body[key] for key in OUR_PARAMS if key in body}
    grammar = response_format.constraint(body)
    if grammar is not None:
        params["grammar"] = grammar
    frame: dict[str, Any] = {"type": "generate", "request_id": "api-" + secrets.token_hex(8), "params": params, "model": model_id}
    save = body.get("save", True)
    frame["save"] = save
    echo = None
    if kind == "completion":
        logprobs, echo = _completion_fields(body, frame, params)
    else:
        logprobs = _chat_fields(body, frame, params)
    if "top_n" in body:  # our extension: how many alternatives each token's trace carries
        frame["top_n"] = body["top_n"]
        names["top_n"] = "top_n"
    elif logprobs:
        frame["top_n"] = logprobs
    if "watch" in body:  # our extension: token ids each token's trace follows (``watched``)
        frame["watch"] = body["watch"]
        names["watch"] = "watch"
    generate = not (echo is not None and params.get("max_tokens") == 0)  # score the prompt only
    if not generate:
        params["max_tokens"] = 1  # checked as a run would be, never run
    job = _parse(frame, names)
    assert isinstance(job, frames.Generate)
    if job.request.loop.num_beams > 1:
        raise ApiError(400, "beam search (num_beams) is served by the websocket API only", "num_beams")
    score = None
    if echo is not None and logprobs is not None:
        top = max(1, logprobs)
        score_frame = {
            "type": "score",
            "request_id": "api-" + secrets.token_hex(8),
            "prompt": echo,
            "top_n": top,
            "model": model_id,
        }
        score = _parse(score_frame, names)
    return ApiRequest(kind, job, model_id, stream, include_usage, logprobs, echo, names, score, generate)


def _parse(frame: dict[str, Any], names: dict[str, str]) -> frames.Job:
    try:
        job = frames.parse_client_message(frame)
    except frames.ProtocolError as error:
        raise from_event(error.to_event(), names) from None
    assert not isinstance(job, frames.Cancel)
    return job


def _completion_fields(body: dict[str, Any], frame: dict[str, Any], params: dict[str, Any]) -> tuple[int | None, str | None]:
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if isinstance(prompt, list):
        raise ApiError(400, "prompt must be one string (a batch of prompts or token ids is not supported)", "prompt")
    if prompt is None:
        raise ApiError(400, "prompt is required", "prompt", "missing_field")
    frame["prompt"] = prompt
    frame["mode"] = "completion"
    if body.get("suffix") not in (None, ""):
        raise ApiError(400, "suffix (insertion) is not supported", "suffix", "unsupported_parameter")
    best_of = body.get("best_of")
    if best_of is not None and best_of != body.get("n", 1):
        raise ApiError(400, "best_of is supported only equal to n", "best_of", "unsupported_parameter")
    params.setdefault("max_tokens", COMPLETION_MAX_TOKENS)
    logprobs = body.get("logprobs")
    if logprobs is not None and (
        isinstance(logprobs, bool) or not isinstance(logprobs, int) or not 0 <= logprobs <= MAX_COMPLETION_LOGPROBS
    ):
        raise ApiError(400, f"logprobs must be an integer from 0 to {MAX_COMPLETION_LOGPROBS} or null", "logprobs")
    echo = _flag(body, "echo")
    if params.get("max_tokens") == 0 and not echo:
        raise ApiError(400, "max_tokens may be 0 only with echo (to score the prompt)", "max_tokens")
    return logprobs, (prompt if echo and isinstance(prompt, str) else None)


def _chat_fields(body: dict[str, Any], frame: dict[str, Any], params: dict[str, Any]) -> int | None:
    if "messages" not in body:
        raise ApiError(400, "messages is required", "messages", "missing_field")
    messages = body["messages"]
    if isinstance(messages, list):
        messages = [_message(i, m) for i, m in enumerate(messages)]
    frame["messages"] = messages
    frame["mode"] = "chat"
    continued = body.get("continue_final_message", False)
    generation_prompt = body.get("add_generation_prompt", not continued if isinstance(continued, bool) else True)
    if generation_prompt is continued:
        raise ApiError(
            400, "add_generation_prompt and continue_final_message cannot both be true (or both false)", "add_generation_prompt"
        )
    frame["continue_final_message"] = continued
    if "max_completion_tokens" in body:
        if "max_tokens" in body:
            raise ApiError(400, "give max_completion_tokens or max_tokens, not both", "max_completion_tokens")
        params["max_tokens"] = body["max_completion_tokens"]
    logprobs = _flag(body, "logprobs")
    top = body.get("top_logprobs")
    if top is not None:
        if isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= MAX_TOP_LOGPROBS:
            raise ApiError(400, f"top_logprobs must be an integer from 0 to {MAX_TOP_LOGPROBS}", "top_logprobs")
        if not logprobs:
            raise ApiError(400, "top_logprobs needs logprobs: true", "top_logprobs")
    return (top or 0) if logprobs else None


def _message(index: int, message: Any) -> Any:
    """OpenAI's message as ours: ``content`` may be a list of text parts; ``name`` is dropped."""
    if not isinstance(message, dict):
        return message  # the frame parser names what is wrong
    message = {k: v for k, v in message.items() if k != "name"}
    if message.get("role") == "developer":
        message["role"] = "system"
    content = message.get("content")
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise ApiError(
                    400, f"messages.{index}.content.{j}: only text parts are supported", f"messages.{index}.content.{j}"
                )
            texts.append(part["text"])
        message["content"] = "".join(texts)
    return message


def _flag(body: dict[str, Any], key: str, param: str | None = None) -> bool:
    value = body.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ApiError(400, f"{param or key} must be true or false", param or key)
    return value
