"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}`` with its HTTP status."""

from __future__ import annotations

import math
from typing import Any

from django.http import JsonResponse

from playground.edge import strict_json
from playground.wire.events import MAX_ERROR_MESSAGE

INVALID_REQUEST = "invalid_request_error"
# Our error codes (docs/websocket-api.md) → (HTTP status, OpenAI error type).
EVENT_STATUS: dict[str, tuple[int, str]] = {
    "invalid_value": (400, INVALID_REQUEST),
    "missing_field": (400, INVALID_REQUEST),
    "unknown_param": (400, INVALID_REQUEST),
    strict_json.CODE: (400, INVALID_REQUEST),
    "prompt_too_long": (400, INVALID_REQUEST),
    "too_many_requests": (429, "rate_limit_error"),
    "rate_limited": (429, "rate_limit_error"),
    "busy": (429, "rate_limit_error"),
    "no_worker": (503, "service_unavailable"),
    "worker_lost": (503, "service_unavailable"),
    "interrupted": (503, "service_unavailable"),  # the channel layer restarted mid-run (docs/deploy.md)
    "cancelled": (499, "cancelled"),
}
DEFAULT_RETRY_AFTER_S = 1


class ApiError(Exception):
    """An answer that is an error: the status, OpenAI's four fields, and extra headers."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        error_type: str = INVALID_REQUEST,
        retry_after: float | None = None,
        run_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message[:MAX_ERROR_MESSAGE]
        self.param = param
        self.code = code
        self.error_type = error_type
        self.retry_after = retry_after
        self.run_id = run_id

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"message": self.message, "type": self.error_type, "param": self.param, "code": self.code}
        if self.run_id is not None:
            error["run_id"] = self.run_id  # a run that failed after it started is saved
        return {"error": error}

    def response(self) -> JsonResponse:
        response = JsonResponse(self.body(), status=self.status)
        if self.status == 429 or self.retry_after is not None:
            response["Retry-After"] = str(max(1, math.ceil(self.retry_after or DEFAULT_RETRY_AFTER_S)))
        return response


def from_event(event: dict[str, Any], param_names: dict[str, str] | None = None) -> ApiError:
    """Our ``error`` event (a worker's or the frame parser's) as the API's error."""
    error = event.get("error", {})
    code = str(error.get("code") or "server_error")
    status, error_type = EVENT_STATUS.get(code, (500, "server_error"))
    retry_after = error.get("retry_after")
    if status == 429 and retry_after is None:
        retry_after = DEFAULT_RETRY_AFTER_S
    openai_code = "context_length_exceeded" if code == "prompt_too_long" else code
    message = str(error.get("message", "the request failed"))
    if isinstance(error.get("param"), str) and error["param"].startswith("params."):
        message = message.replace("params.", "")  # the body names our parameters at its top level
    return ApiError(
        status,
        message,
        openai_param(error.get("param"), param_names or {}),
        openai_code,
        error_type,
        retry_after,
        event.get("run_id"),
    )


def openai_param(param: Any, names: dict[str, str]) -> str | None:
    """Our field path as the request body named it: ``params.temperature`` → ``temperature``,
    ``top_n`` → ``logprobs`` (via ``names``), nested paths kept after their first part."""
    if not isinstance(param, str) or not param:
        return None
    path = param.removeprefix("params.")
    head, dot, rest = path.partition(".")
    return names.get(head, head) + dot + rest


def not_found(message: str, param: str | None = None, code: str = "not_found") -> ApiError:
    return ApiError(404, message, param, code)
