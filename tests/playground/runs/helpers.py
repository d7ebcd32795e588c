"""Websocket events shaped exactly as playground.wire.events formats them (a token through its
class), for runs made without the model, and a recorder that saves them."""

from __future__ import annotations

from typing import Any

from inference.decoding.request import parse_params
from playground.runs.recording import RunRecorder
from playground.wire.token_event import TokenEvent

MODEL = {
    "name": "SmolLM2-135M-Instruct",
    "manifest_sha256": "ab" * 32,
    "execution_provider": "CPUExecutionProvider",
    "onnxruntime_version": "1.31.1",
    "context_window": 8192,
}
STAGES = ["temperature", "top_p", "dist"]


def params(**overrides: Any) -> dict[str, Any]:
    """Normalized params, every key filled in, as the server's ``started`` event carries them."""
    sampling, loop = parse_params({"temperature": 0.7, "top_p": 0.9, "max_tokens": 3, "seed": 42} | overrides)
    return {**sampling.to_dict(), **loop.to_dict()}


def started(seed: int = 42, **param_overrides: Any) -> dict[str, Any]:
    return {
        "type": "started",
        "request_id": "r",
        "seed": seed,
        "mode": "completion",
        "prompt_tokens": [{"id": 0, "text": "<|endoftext|>"}, {"id": 504, "text": "The"}],
        "params": params(seed=seed, **param_overrides),
        "top_n": 3,
        "use_cache": True,
        "model": MODEL,
    }


def token(
    index: int,
    token_id: int,
    text: str,
    alternatives: list[tuple[int, str, float, float]],
    draw: float | None = 0.25,
    sample: int = 0,
) -> dict[str, Any]:
    """A ``token`` event as the server sends it, made through ``TokenEvent`` (its keys in the class's
    order): the fields given here, and each field added since (``TokenEvent.LATER``) as a run saved
    before it reads — ``origin`` the one the draw implies, ``draw_interval`` null, no ``watched``
    (test_token_rows stores real ones). The event's keys as written by hand: test_token_event."""
    chosen = next(a for a in alternatives if a[0] == token_id)
    first_fields = {
        "type": "token",
        "request_id": "r",
        "sample": sample,
        "index": index,
        "id": token_id,
        "token": text,
        "text": text,
        "raw_prob": chosen[2],
        "prob": chosen[3],
        "removed_by": None,
        "alternatives": [
            {"id": i, "token": t, "raw_prob": raw, "prob": p, "removed_by": None if p > 0 else "top_p"}
            for i, t, raw, p in alternatives
        ],
        "forced": False,
        "draw": draw,
        "entropy": {"before": 1.5, "after": 0.9},
        "stages": [{"name": s, "kept": 10 - k} for k, s in enumerate(STAGES)],
        "elapsed_ms": 20.5,
    }
    return TokenEvent.from_json(TokenEvent.filled(first_fields)).to_json()


def done(reason: str = "max_tokens", text: str = "", n_tokens: int = 3) -> dict[str, Any]:
    return {
        "type": "done",
        "request_id": "r",
        "reason": reason,
        "stop_string": None,
        "text": text,
        "tail": "",
        "samples": [
            {"sample": 0, "reason": reason, "stop_string": None, "text": text, "tail": "", "completion_tokens": n_tokens}
        ],
        "beams": [],
        "usage": {"prompt_tokens": 2, "completion_tokens": n_tokens, "total_completion_tokens": n_tokens},
        "timing": {"time_to_first_token_ms": 41.2, "decode_tokens_per_s": 52.3, "total_ms": 120.0},
    }


PARIS = [
    (7042, " Paris", [(7042, " Paris", 0.5, 0.7), (253, " a", 0.2, 0.3), (9, " the", 0.1, 0.0)]),
    (30, ".", [(30, ".", 0.6, 0.8), (28, ",", 0.3, 0.2), (11, " and", 0.05, 0.0)]),
    (314, " It", [(314, " It", 0.4, 0.5), (378, " The", 0.35, 0.5), (11, " and", 0.1, 0.0)]),
]


def events(tokens=PARIS, seed: int = 42, reason: str = "max_tokens", draws=None, **param_overrides: Any) -> list[dict[str, Any]]:
    draws = draws or [0.25] * len(tokens)
    out = [started(seed, **param_overrides)]
    out += [token(i, tid, text, alts, draws[i]) for i, (tid, text, alts) in enumerate(tokens)]
    out.append(done(reason, "".join(t for _, t, _ in tokens), len(tokens)))
    return out


def record(evts: list[dict[str, Any]], prompt: str = "The") -> dict[str, Any]:
    """Feeds events to a recorder as the worker does; returns the done event it would emit."""
    recorder = RunRecorder("r", {"prompt": prompt, "mode": "completion", "system": None})
    for event in evts[:-1]:
        recorder.observe(event)
    return recorder.finish(evts[-1])
