"""The websocket protocol's wire format: client frames in, server events out (docs/websocket-api.md).

Parsing is strict: every field is checked, unknown keys are errors, and each error names the field
and what it allows. Formatting turns the inference package's objects into JSON-ready dicts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from inference.errors import ParamError
from inference.beam import BeamStep, Proposal
from inference.generation import Finished, GenerationRequest, Started, TokenStep
from inference.runtime import ModelInfo
from inference.sampling import SamplingParams
from inference.loop_params import LoopParams
from inference.text import TextCodec

REQUEST_ID = re.compile(r"^[A-Za-z0-9_\-.:]{1,64}$")
PROMPT_CHARACTERS = (1, 20_000)
TOP_N = (1, 20)
GENERATE_KEYS = frozenset({"type", "request_id", "prompt", "mode", "system", "params", "top_n", "use_cache"})
CANCEL_KEYS = frozenset({"type", "request_id"})


class ProtocolError(Exception):
    """A client frame the server cannot act on; becomes an ``error`` event."""

    def __init__(self, code: str, message: str, param: str | None = None, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.param = param
        self.request_id = request_id

    def to_event(self) -> dict[str, Any]:
        return error_event(self.code, self.message, self.param, self.request_id)


@dataclass(frozen=True)
class Generate:
    request_id: str
    request: GenerationRequest


@dataclass(frozen=True)
class Cancel:
    request_id: str


def parse_client_frame(text: str) -> Generate | Cancel:
    try:
        message = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, RecursionError) as error:
        raise ProtocolError("invalid_json", f"the frame is not valid JSON: {error}") from None
    if not isinstance(message, dict):
        raise ProtocolError("invalid_json", f"the frame must be a JSON object, got {type(message).__name__}")
    request_id = message.get("request_id")
    known_id = request_id if isinstance(request_id, str) and REQUEST_ID.match(request_id) else None
    kind = message.get("type")
    try:
        if kind == "generate":
            return Generate(_request_id(message), parse_generate(message))
        if kind == "cancel":
            _reject_unknown(message, CANCEL_KEYS)
            return Cancel(_request_id(message))
    except ProtocolError as error:
        error.request_id = known_id
        raise
    raise ProtocolError(
        "unknown_type", f"type must be \"generate\" or \"cancel\", got {kind!r}", "type", known_id
    )


def _reject_constant(name: str) -> None:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def parse_generate(message: Mapping[str, Any]) -> GenerationRequest:
    """A ``generate`` frame's request, validated (the prompt's length in tokens is checked later)."""
    _reject_unknown(message, GENERATE_KEYS)
    prompt = message.get("prompt")
    if prompt is None:
        raise ProtocolError("missing_field", "prompt is required", "prompt")
    low, high = PROMPT_CHARACTERS
    if not isinstance(prompt, str) or not low <= len(prompt) <= high:
        raise ProtocolError("invalid_value", f"prompt must be a string of {low} to {high} characters", "prompt")
    mode = message.get("mode", "completion")
    if mode not in ("completion", "chat"):
        raise ProtocolError("invalid_value", f"mode must be \"completion\" or \"chat\", got {mode!r}", "mode")
    system = message.get("system")
    if system is not None and (mode != "chat" or not isinstance(system, str) or len(system) > high):
        raise ProtocolError("invalid_value", f"system must be a string of at most {high} characters, in chat mode only", "system")
    top_n = message.get("top_n", 5)
    if isinstance(top_n, bool) or not isinstance(top_n, int) or not TOP_N[0] <= top_n <= TOP_N[1]:
        raise ProtocolError("invalid_value", f"top_n must be an integer from {TOP_N[0]} to {TOP_N[1]}, got {top_n!r}", "top_n")
    use_cache = message.get("use_cache", True)
    if not isinstance(use_cache, bool):
        raise ProtocolError("invalid_value", f"use_cache must be true or false, got {use_cache!r}", "use_cache")
    sampling, stopping = parse_params(message.get("params", {}))
    return GenerationRequest(prompt, mode, system, sampling, stopping, top_n, use_cache)


def parse_params(params: Any) -> tuple[SamplingParams, LoopParams]:
    """Splits the flat ``params`` object between the sampler chain and the stopping rules."""
    if not isinstance(params, dict):
        raise ProtocolError("invalid_value", "params must be an object", "params")
    sampling_keys = SamplingParams.field_names()
    stopping_keys = LoopParams.field_names()
    unknown = sorted(set(params) - sampling_keys - stopping_keys)
    if unknown:
        raise ProtocolError("unknown_param", f"unknown parameter params.{unknown[0]}", f"params.{unknown[0]}")
    try:
        sampling = SamplingParams.from_dict({k: v for k, v in params.items() if k in sampling_keys})
        stopping = LoopParams.from_dict({k: v for k, v in params.items() if k in stopping_keys})
    except ParamError as error:
        prefixed = error.prefixed("params.")
        raise ProtocolError(prefixed.code, prefixed.message, prefixed.param) from None
    except (TypeError, ValueError) as error:
        raise ProtocolError("invalid_value", f"params: {error}", "params") from None
    return sampling, stopping


def request_to_dict(request: GenerationRequest) -> dict[str, Any]:
    """The request as the worker receives it over the channel layer."""
    return {
        "prompt": request.prompt,
        "mode": request.mode,
        "system": request.system,
        "params": request.params_dict(),
        "top_n": request.top_n,
        "use_cache": request.use_cache,
    }


def request_from_dict(data: Mapping[str, Any]) -> GenerationRequest:
    return parse_generate(data)


def _request_id(message: Mapping[str, Any]) -> str:
    request_id = message.get("request_id")
    if request_id is None:
        raise ProtocolError("missing_field", "request_id is required", "request_id")
    if not isinstance(request_id, str) or not REQUEST_ID.match(request_id):
        raise ProtocolError(
            "invalid_value", "request_id must be 1 to 64 characters of A-Z a-z 0-9 _ - . :", "request_id"
        )
    return request_id


def _reject_unknown(message: Mapping[str, Any], known: frozenset[str]) -> None:
    unknown = sorted(set(message) - known)
    if unknown:
        raise ProtocolError("unknown_param", f"unknown field {unknown[0]!r}", unknown[0])


# Server → client events.


def param_error_event(error: ParamError, request_id: str | None) -> dict[str, Any]:
    """A parameter error found by the inference side; fields of ``params`` are named as such."""
    field_name = error.param.split(".")[0]
    if field_name in SamplingParams.field_names() | LoopParams.field_names():
        error = error.prefixed("params.")
    return error_event(error.code, error.message, error.param, request_id)


def error_event(code: str, message: str, param: str | None = None, request_id: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "error", "error": {"code": code, "message": message, "param": param}}
    if request_id is not None:
        event["request_id"] = request_id
    return event


def started_event(request_id: str, started: Started, codec: TextCodec, model: ModelInfo) -> dict[str, Any]:
    request = started.request
    return {
        "type": "started",
        "request_id": request_id,
        "seed": started.seed,
        "mode": request.mode,
        "prompt_tokens": [{"id": i, "text": codec.token_text(i)} for i in started.prompt_ids],
        "params": request.params_dict(),
        "top_n": request.top_n,
        "use_cache": request.use_cache,
        "model": model.to_dict(),
    }


def token_event(request_id: str, step: TokenStep, codec: TextCodec) -> dict[str, Any]:
    trace = step.trace
    chosen = trace.chosen
    return {
        "type": "token",
        "request_id": request_id,
        "sample": step.sample,
        "index": step.index,
        "id": step.token_id,
        "token": codec.token_text(step.token_id),
        "text": step.text,
        "raw_prob": chosen.raw_prob,
        "prob": chosen.prob,
        "alternatives": [
            {"id": a.id, "token": codec.token_text(a.id), "raw_prob": a.raw_prob, "prob": a.prob, "removed_by": a.removed_by}
            for a in trace.alternatives
        ],
        "draw": trace.draw,
        "entropy": {"before": trace.entropy_before, "after": trace.entropy_after},
        "stages": [{"name": s.name, "kept": s.kept} for s in trace.stages],
        "elapsed_ms": round(step.elapsed_ms, 3),
    }


def beam_step_event(request_id: str, step: BeamStep, codec: TextCodec) -> dict[str, Any]:
    def proposal(p: Proposal) -> dict[str, Any]:
        return {
            "parent": p.parent, "id": p.token_id, "token": codec.token_text(p.token_id),
            "logprob": p.logprob, "cum_logprob": p.cum_logprob,
        }

    return {
        "type": "beam_step",
        "request_id": request_id,
        "index": step.index,
        "beams": [proposal(p) for p in step.kept],
        "pruned": [proposal(p) for p in step.pruned],
        "finished": [proposal(p) for p in step.finished],
        "elapsed_ms": round(step.elapsed_ms, 3),
    }


def done_event(request_id: str, finished: Finished) -> dict[str, Any]:
    """Sample 0's outcome at the top level; every sample's in ``samples``."""
    return {
        "type": "done",
        "request_id": request_id,
        "reason": finished.reason,
        "stop_string": finished.stop_string,
        "text": finished.text,
        "tail": finished.tail,
        "samples": [
            {
                "sample": s.sample, "reason": s.reason, "stop_string": s.stop_string, "text": s.text,
                "tail": s.tail, "completion_tokens": s.completion_tokens,
            }
            for s in finished.samples
        ],
        "beams": [
            {"token_ids": list(h.token_ids), "cum_logprob": h.cum_logprob, "score": h.score, "reason": h.reason}
            for h in finished.beams
        ],
        "usage": {
            "prompt_tokens": finished.prompt_tokens,
            "completion_tokens": finished.completion_tokens,
            "total_completion_tokens": sum(s.completion_tokens for s in finished.samples),
        },
        "timing": {
            "time_to_first_token_ms": _round(finished.time_to_first_token_ms),
            "decode_tokens_per_s": _round(finished.decode_tokens_per_s),
            "total_ms": _round(finished.total_ms),
        },
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
