"""Issue 12's page edges: one Content-Security-Policy on every page, and static paths that try to
climb out of the static directories answered 404 (through the same ASGI handler daphne serves)."""

from __future__ import annotations

import pytest
from asgiref.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application

from playground.edge.security import CONTENT_SECURITY_POLICY

pytestmark = pytest.mark.django_db

PAGES = [
    "/",
    "/history",
    "/compare/live",
    "/r/not-a-run",
    "/compare/a,b",
    "/api/params.schema.json",
    "/api/runs/summaries?ids=",
    "/no-such-page",
]


@pytest.mark.parametrize("url", PAGES)
def test_every_page_has_the_same_policy(client, url):
    response = client.get(url)
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY


def test_the_policy_allows_only_the_sites_own_scripts():
    directives = dict(part.strip().split(" ", 1) for part in CONTENT_SECURITY_POLICY.split(";"))
    assert directives["script-src"] == "'self'" and directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'" and directives["base-uri"] == "'none'"


async def _get(path: str, raw_path: bytes) -> int:
    app = get_asgi_application()  # static files through the WhiteNoise middleware, as daphne serves them
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": raw_path,
        "query_string": b"",
        "headers": [(b"host", b"localhost")],
        "server": ("localhost", 80),
        "client": ("127.0.0.1", 1),
    }
    communicator = ApplicationCommunicator(app, scope)
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(timeout=10)
    while True:  # drain the body
        message = await communicator.receive_output(timeout=10)
        if not message.get("more_body"):
            break
    # the client goes, and the application ends: a task of it left pending would be destroyed later,
    # logging an error into whichever test runs then
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(timeout=10)
    return start["status"]


# (path as the server decodes it, the raw path on the wire)
CLIMBING = [
    ("/static/../manage.py", b"/static/../manage.py"),
    ("/static/../manage.py", b"/static/%2e%2e/manage.py"),
    ("/static/../manage.py", b"/static/..%2fmanage.py"),
    ("/static/playground/../../manage.py", b"/static/playground/../../manage.py"),
    ("/static/../../../etc/passwd", b"/static/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc/passwd"),
    ("/static//etc/passwd", b"/static//etc/passwd"),
]


@pytest.mark.parametrize("path, raw", CLIMBING)
async def test_static_paths_that_climb_are_not_found(path, raw):
    assert await _get(path, raw) == 404


async def test_static_files_are_still_served():
    assert await _get("/static/playground/js/main.js", b"/static/playground/js/main.js") == 200
    assert await _get("/static/nope.js", b"/static/nope.js") == 404
