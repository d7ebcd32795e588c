"""Which pages may open the websocket: the ``Origin`` header checked by scheme, host and port.

A page may connect when its origin is listed in ``WEBSOCKET_ALLOWED_ORIGINS``, or when it is the
server's own origin: the same host and port as the socket's ``Host`` header (a host in
``ALLOWED_HOSTS``) and the matching scheme (``http`` for ``ws``, ``https`` for ``wss``; behind a
TLS-terminating proxy, ``SECURE_PROXY_SSL_HEADER`` says how the proxy marks a secure request).
Any other origin, or none, is refused during the handshake.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int]  # (scheme, host, port)


def parse_origin(text: str) -> Origin | None:
    """``scheme://host[:port]`` as (scheme, lower-case host, port with the scheme's default)."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/") or parts.query:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def own_origin(scope: dict[str, Any], headers: dict[str, str]) -> Origin | None:
    """The origin of a page served by this server at the socket's own address, if its host is allowed."""
    secure = scope.get("scheme") == "wss"
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        name, value = proxy_header
        forwarded = headers.get(name.removeprefix("HTTP_").replace("_", "-").lower())
        secure = secure or (forwarded is not None and forwarded.split(",")[0].strip() == value)
    scheme = "https" if secure else "http"
    host = headers.get("host")
    if not host:
        return None
    parsed = parse_origin(f"{scheme}://{host}")
    if parsed is None or not validate_host(parsed[1] if ":" not in parsed[1] else f"[{parsed[1]}]", settings.ALLOWED_HOSTS):
        return None
    return parsed


def origin_allowed(scope: dict[str, Any]) -> bool:
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", [])}
    origin = parse_origin(headers.get("origin", ""))
    if origin is None:
        return False
    if origin in _listed(settings.WEBSOCKET_ALLOWED_ORIGINS):
        return True
    return origin == own_origin(scope, headers)


def _listed(origins: Iterable[str]) -> set[Origin]:
    return {parsed for text in origins if (parsed := parse_origin(text)) is not None}


class OriginValidator:
    """ASGI middleware: refuses a websocket whose origin is not allowed (see the module docstring)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier.as_asgi()(scope, receive, send)
        return await self.application(scope, receive, send)
