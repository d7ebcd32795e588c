"""Server events out: the inference package's objects as the JSON-ready dicts the websocket sends
(docs/websocket-api.md), and the one encoder that keeps every reply sendable and bounded.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inference.batching.slots import BatchStep, Slots
from inference.decoding.loop_params import LoopParams
from inference.decoding.results import BeamStep, Finished, Proposal, Started, TokenStep, Verification
from inference.decoding.surprisal import PromptSurprisal
from inference.decoding.whatif import Variant
from inference.errors import ParamError
from inference.runtime import ModelInfo
from inference.sampling import SamplingParams, StepTrace
from inference.text import TextCodec
from playground.wire.token_event import TokenEvent, TraceView

log = logging.getLogger(__name__)

FINAL_EVENTS = frozenset({"done", "error", "tokens", "inspection", "prompt_scores"})  # a request's last event is one of these
MAX_ERROR_MESSAGE = 300  # characters: an error message never grows with the input
TOKENIZE_PAGE = (1, 4096)  # tokens per ``tokens`` event: ``limit``'s range and default (the maximum)
MAX_REPLY_BYTES = 1024 * 1024  # no server event is larger (the client's usual frame limit)
PROMPT_SURPRISAL_PAGE = 256  # prompt tokens per ``prompt_surprisal`` event: 20 alternatives each stay far below the limit


# Events a worker sends already encoded (``Frame``): the per-token stream, hundreds a second from a
# batch. The rest (``started``, ``done``, errors, ...) travel as dicts: the front door reads them.
FRAMED_EVENTS = frozenset({"token"})


@dataclass(frozen=True, slots=True)
class Frame:
    """A server event already encoded as the text frame that carries it (``encode_event``), once,
    by the worker that made it: the front door passes the text on as it is and reads only ``type``
    and ``request_id``; ``event()`` parses it for the rare reader that needs its fields (the HTTP
    API's translation, a run saved after its worker was lost)."""

    type: str
    request_id: str
    text: str

    @classmethod
    def of(cls, event: dict[str, Any]) -> Frame:
        return cls(str(event["type"]), str(event["request_id"]), encode_event(event))

    def event(self) -> dict[str, Any]:
        return json.loads(self.text)  # type: ignore[no-any-return]


def event_type(event: dict[str, Any] | Frame) -> str | None:
    """The ``type`` of an event, encoded or not."""
    return event.type if isinstance(event, Frame) else event.get("type")


def param_error_event(error: ParamError, request_id: str | None) -> dict[str, Any]:
    """A parameter error found by the inference side; fields of ``params`` are named as such."""
    field_name = error.param.split(".")[0]
    if field_name in SamplingParams.field_names() | LoopParams.field_names() | {"speculative"}:
        error = error.prefixed("params.")
    return error_event(error.code, error.message, error.param, request_id)


def error_event(code: str, message: str, param: str | None = None, request_id: str | None = None) -> dict[str, Any]:
    """An ``error`` event; its message (and field name) cut to ``MAX_ERROR_MESSAGE`` characters whatever made it."""
    event: dict[str, Any] = {"type": "error", "error": {"code": code, "message": clip(message), "param": clip(param)}}
    if request_id is not None:
        event["request_id"] = request_id
    return event


def clip(text: str | None) -> str | None:
    """An error's text as it is sent: at most ``MAX_ERROR_MESSAGE`` characters, an ellipsis ending a cut one."""
    if text is None or len(text) <= MAX_ERROR_MESSAGE:
        return text
    return text[: MAX_ERROR_MESSAGE - 1] + "…"


def unknown_request_event(request_id: str) -> dict[str, Any]:
    """The answer to a cancel of a request that is not running (never was, or has ended)."""
    return error_event("unknown_request", f"no running request has request_id {request_id!r}", "request_id", request_id)


def limit_event(code: str, message: str, retry_after: float | None, request_id: str) -> dict[str, Any]:
    """A request refused by a per-client limit; ``retry_after`` (seconds, or null: when one of the
    client's requests has ended) says when to try again."""
    event = error_event(code, message, None, request_id)
    event["error"]["retry_after"] = retry_after
    return event


def ended_by_cancel(event: Mapping[str, Any]) -> bool:
    """Whether a request's last event says a cancel ended it."""
    if event.get("type") == "done":
        return event.get("reason") == "cancelled"
    return event.get("type") == "error" and event.get("error", {}).get("code") == "cancelled"


def encode_event(event: dict[str, Any]) -> str:
    """An event as the text frame that carries it. An event that cannot be sent as it is (larger
    than ``MAX_REPLY_BYTES``, or not encodable) becomes an ``error`` for its request instead, so a
    reply never breaks the socket."""
    try:
        text = json.dumps(event, ensure_ascii=False, allow_nan=False)
        size = len(text.encode("utf-8"))
    except (TypeError, ValueError) as error:  # UnicodeEncodeError is a ValueError
        problem = f"could not be encoded ({type(error).__name__})"
    else:
        if size <= MAX_REPLY_BYTES:
            return text
        problem = f"would be {size} bytes, over the limit of {MAX_REPLY_BYTES}"
    kind = str(event.get("type"))[:20]
    request_id = event.get("request_id") if isinstance(event.get("request_id"), str) else None
    log.warning("a %s event of request %s %s; sent an error instead", kind, request_id, problem)
    code = "reply_too_large" if "bytes" in problem else "internal_error"
    return json.dumps(error_event(code, f"the {kind} event {problem}", None, request_id), ensure_ascii=True)


def not_started_event(request_id: str) -> dict[str, Any]:
    """The answer to a request cancelled before it started (or before an inspection's answer was
    ready): nothing ran that is worth keeping, and nothing is saved."""
    return error_event(
        "cancelled", "the request was cancelled before it started or was answered; nothing was saved", None, request_id
    )


def loading_event(request_id: str, model_id: str, name: str) -> dict[str, Any]:
    """The run waits for its model to load (the first run of that model since the worker started,
    or one that came while it loaded): what the page says meanwhile. ``done.timing.load_ms`` then
    says how long the wait was."""
    return {"type": "loading", "request_id": request_id, "model": model_id, "name": name}


def started_event(
    request_id: str, started: Started, codec: TextCodec, model: ModelInfo, slots: Slots | None = None
) -> dict[str, Any]:
    """``batch`` (from a batching worker): the batch rows this run holds and the batch's size."""
    request = started.request
    batch = {} if slots is None else {"batch": {"slots": list(slots.slots), "max_batch": slots.max_batch}}
    return {
        "type": "started",
        "request_id": request_id,
        "seed": started.seed,
        "mode": request.mode,
        "prompt_tokens": _token_views(started.prompt_ids, codec),
        "params": request.params_dict(),
        "top_n": request.top_n,
        "use_cache": request.use_cache,
        "prompt_scores": request.prompt_scores,
        "model": model.to_dict(),
        **batch,
    }


def prompt_surprisal_events(request_id: str, surprisal: PromptSurprisal, codec: TextCodec) -> list[dict[str, Any]]:
    """A run's prompt surprisal (``inference.decoding.surprisal``) in pages of ``PROMPT_SURPRISAL_PAGE``
    tokens, each with the whole prompt's ``count``, ``perplexity`` and ``total_bits``."""
    tokens = surprisal.tokens
    summary = {"count": len(tokens), "perplexity": surprisal.perplexity, "total_bits": surprisal.total_bits}
    return [
        {
            "type": "prompt_surprisal",
            "request_id": request_id,
            "offset": offset,
            "tokens": [
                {
                    "id": t.token_id,
                    "token": codec.token_text(t.token_id),
                    "prob": t.prob,
                    "logprob": t.logprob,
                    "rank": t.rank,
                    "entropy": t.entropy,
                    "alternatives": [{"id": i, "token": codec.token_text(i), "prob": math.exp(lp)} for i, lp in t.top],
                }
                for t in tokens[offset : offset + PROMPT_SURPRISAL_PAGE]
            ],
            **summary,
        }
        for offset in range(0, len(tokens), PROMPT_SURPRISAL_PAGE)
    ]


def token_event(
    request_id: str, step: TokenStep, codec: TextCodec, batch: BatchStep | None = None, speculative: bool = False
) -> dict[str, Any]:
    """``batch`` (from a batching worker): the worker's step counter, and the rows and requests
    that took a token in that step. ``speculative``: the run's tokens say whether each was a
    drafted token the model accepted (``drafted``). The event's one definition is
    ``playground.wire.token_event.TokenEvent``."""
    return TokenEvent.of_step(request_id, step, codec, batch, speculative).to_json()


def verification_event(request_id: str, verification: Verification, codec: TextCodec) -> dict[str, Any]:
    """One speculative step's drafts as the model judged them, sent before the step's tokens: each
    drafted token with ``accepted``, ``p``, ``q`` and ``draw`` (null for the drafts never judged,
    after the first rejection or the end of the run), and the corrected or bonus token."""
    checks = verification.checks

    def drafted(position: int, token: int) -> dict[str, Any]:
        judged = position < len(checks)
        check = checks[position] if judged else None
        return {
            "id": token,
            "token": codec.token_text(token),
            "accepted": None if check is None else check.accepted,
            "p": None if check is None else check.p,
            "q": None if check is None else check.q,
            "draw": None if check is None else check.draw,
        }

    def chosen(token: int | None) -> dict[str, Any] | None:
        return None if token is None else {"id": token, "token": codec.token_text(token)}

    return {
        "type": "verification",
        "request_id": request_id,
        "sample": verification.sample,
        "index": verification.index,
        "drafted": [drafted(i, token) for i, token in enumerate(verification.drafted)],
        "accepted": verification.accepted,
        "corrected": chosen(verification.corrected),
        "bonus": chosen(verification.bonus),
    }


def trace_fields(trace: StepTrace, codec: TextCodec) -> dict[str, Any]:
    """What one step of the chain did, as every event that shows a step carries it: the
    alternatives with their raw and final probabilities, each stage's count, the entropies
    (``TraceView``, the same parts as the ``token`` event's)."""
    return TraceView.of(trace, codec.token_text).to_json()


def beam_step_event(request_id: str, step: BeamStep, codec: TextCodec) -> dict[str, Any]:
    def proposal(p: Proposal) -> dict[str, Any]:
        return {
            "parent": p.parent,
            "id": p.token_id,
            "token": codec.token_text(p.token_id),
            "logprob": p.logprob,
            "cum_logprob": p.cum_logprob,
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


def tokens_event(
    request_id: str,
    ids: list[int],
    codec: TextCodec,
    context_window: int,
    offset: int = 0,
    limit: int = TOKENIZE_PAGE[1],
    model: str | None = None,
) -> dict[str, Any]:
    """One page of a text's tokens: ``limit`` of them from ``offset``; ``count`` is the whole
    text's, ``next_offset`` where the next page starts (null after the last page); ``model`` the
    id of the model whose tokenizer answered."""
    end = min(offset + limit, len(ids))
    return {
        "type": "tokens",
        "request_id": request_id,
        "model": model,
        "tokens": _token_views(ids[offset:end], codec),
        "count": len(ids),
        "offset": offset,
        "next_offset": end if end < len(ids) else None,
        "context_window": context_window,
        "vocab_size": codec.vocab_size,
    }


def inspection_event(request_id: str, position: int, variants: list[Variant], codec: TextCodec) -> dict[str, Any]:
    return {
        "type": "inspection",
        "request_id": request_id,
        "position": position,
        "traces": [
            {
                "params": v.params.to_dict(),
                **trace_fields(v.trace, codec),
                "top_final": [{"id": i, "token": codec.token_text(i), "prob": p} for i, p in v.top_final],
            }
            for v in variants
        ],
    }


def _token_views(ids: list[int], codec: TextCodec) -> list[dict[str, Any]]:
    return [{"id": i, "text": codec.token_text(i)} for i in ids]


def done_event(request_id: str, finished: Finished, load_ms: float | None = None) -> dict[str, Any]:
    """Sample 0's outcome at the top level; every sample's in ``samples``. ``load_ms``: how long the
    run waited for its model to load before its turn (None: the model was loaded already); not part
    of the time to first token, which runs from the run's turn."""
    return {
        "type": "done",
        "request_id": request_id,
        "reason": finished.reason,
        "stop_string": finished.stop_string,
        "text": finished.text,
        "tail": finished.tail,
        "samples": [
            {
                "sample": s.sample,
                "reason": s.reason,
                "stop_string": s.stop_string,
                "text": s.text,
                "tail": s.tail,
                "completion_tokens": s.completion_tokens,
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
            "load_ms": _round(load_ms),
        },
        "speculative": None if finished.speculative is None else finished.speculative.to_dict(),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
