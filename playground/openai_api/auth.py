"""Who may call ``/v1/``: optional bearer API keys, and cross-origin browsers from configured origins.

- API keys (``settings.OPENAI_API["API_KEYS_REQUIRED"]``, env ``PLAYGROUND_API_KEYS_REQUIRED=1``):
  ``Authorization: Bearer <key>`` must name a key made by ``manage.py apikey create`` and not
  revoked; only the key's sha256 is stored. Off by default (the embedded, local setup).
- CORS (``settings.OPENAI_API["CORS_ALLOWED_ORIGINS"]``, env ``PLAYGROUND_API_CORS_ORIGINS``): a
  request whose ``Origin`` is listed gets ``Access-Control-Allow-Origin`` for it, and a preflight
  (``OPTIONS``) the methods and headers it may use; any other origin gets no CORS headers, so
  browsers keep its page from reading the answer.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse

from playground.openai_api.errors import ApiError
from playground.openai_api.models import ApiKey

ALLOWED_HEADERS = (
    "Authorization, Content-Type, OpenAI-Organization, OpenAI-Project, X-Stainless-Lang, X-Stainless-Package-Version"
)
PREFLIGHT_MAX_AGE_S = 600


async def check_api_key(request: HttpRequest) -> None:
    """Raises a 401 when keys are required and the request does not carry a valid one."""
    if not settings.OPENAI_API["API_KEYS_REQUIRED"]:
        return
    header = request.headers.get("Authorization", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise ApiError(401, "an API key is required: send Authorization: Bearer <key>", None, "missing_api_key")
    if not await database_sync_to_async(ApiKey.valid)(secret.strip()):
        raise ApiError(401, "the API key is not valid (unknown or revoked)", None, "invalid_api_key")


def allowed_origin(request: HttpRequest) -> str | None:
    origin = request.headers.get("Origin")
    if origin and origin.rstrip("/") in settings.OPENAI_API["CORS_ALLOWED_ORIGINS"]:
        return origin
    return None


def with_cors(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    origin = allowed_origin(request)
    if origin is not None:
        response["Access-Control-Allow-Origin"] = origin
        response["Access-Control-Expose-Headers"] = "Retry-After"
    response["Vary"] = "Origin"
    return response


def preflight(request: HttpRequest, methods: tuple[str, ...]) -> HttpResponse:
    """The answer to a CORS preflight: 204, with the permissions only for an allowed origin."""
    response = HttpResponse(status=204)
    if allowed_origin(request) is not None:
        response["Access-Control-Allow-Methods"] = ", ".join((*methods, "OPTIONS"))
        response["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
        response["Access-Control-Max-Age"] = str(PREFLIGHT_MAX_AGE_S)
    return response
