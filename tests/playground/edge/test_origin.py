"""The websocket origin rule on its own: scheme, host and port, against settings."""

from __future__ import annotations

import pytest

from playground.edge.origin import origin_allowed, parse_origin


def scope(origin: str | None, host: str | None = "localhost:8000", scheme: str = "ws", **headers: str) -> dict:
    pairs = [] if origin is None else [(b"origin", origin.encode())]
    if host is not None:
        pairs.append((b"host", host.encode()))
    pairs += [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    return {"type": "websocket", "scheme": scheme, "headers": pairs}


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("http://localhost", ("http", "localhost", 80)),
        ("https://Example.COM", ("https", "example.com", 443)),
        ("http://[::1]:8000", ("http", "::1", 8000)),
        ("http://localhost/", ("http", "localhost", 80)),
        ("null", None),
        ("", None),
        ("ws://localhost", None),
        ("http://", None),
        ("http://localhost:99999", None),
        ("http://localhost/page", None),
    ],
)
def test_parse_origin(text, parsed):
    assert parse_origin(text) == parsed


@pytest.mark.parametrize(
    "origin, host, scheme, allowed",
    [
        ("http://localhost:8000", "localhost:8000", "ws", True),
        ("http://localhost:8001", "localhost:8000", "ws", False),  # another port
        ("https://localhost:8000", "localhost:8000", "ws", False),  # another scheme
        ("https://localhost", "localhost", "wss", True),
        ("http://localhost", "localhost", "wss", False),
        ("http://evil.example:8000", "evil.example:8000", "ws", False),  # same origin, but not an allowed host
        ("http://127.0.0.1:80", "127.0.0.1", "ws", True),  # default port either way
        (None, "localhost:8000", "ws", False),
        ("http://localhost:8000", None, "ws", False),
    ],
)
def test_the_servers_own_origin(settings, origin, host, scheme, allowed):
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    settings.WEBSOCKET_ALLOWED_ORIGINS = []
    assert origin_allowed(scope(origin, host, scheme)) is allowed


def test_listed_origins_match_scheme_host_and_port(settings):
    settings.WEBSOCKET_ALLOWED_ORIGINS = ["https://app.example", "http://tools.example:9000"]
    assert origin_allowed(scope("https://app.example:443", "ws.example"))
    assert origin_allowed(scope("http://tools.example:9000", "ws.example"))
    assert not origin_allowed(scope("http://app.example", "ws.example"))
    assert not origin_allowed(scope("http://tools.example", "ws.example"))


def test_a_proxy_marks_a_secure_request(settings):
    settings.ALLOWED_HOSTS = ["play.example"]
    settings.WEBSOCKET_ALLOWED_ORIGINS = []
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert origin_allowed(scope("https://play.example", "play.example", x_forwarded_proto="https"))
    assert not origin_allowed(scope("https://play.example", "play.example"))
