"""Issue 12's page edges against the real daphne: one Content-Security-Policy on every page (and
Chromium loads each page without a single violation of it), and static paths that try to climb
out of the static directories answered 404 — sent as raw HTTP, so no client normalizes them."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page

from playground.edge.security import CONTENT_SECURITY_POLICY
from tests.e2e.playground_page import page_errors

pytestmark = pytest.mark.e2e

PAGES = [
    "/",
    "/history",
    "/compare/live",
    "/batch",
    "/r/" + "x" * 22,
    "/compare/aaaaaaaaaaaaaaaaaaaaaa,bbbbbbbbbbbbbbbbbbbbbb",
    "/api/params.schema.json",
    "/api/load",
]


def raw_get(base_url: str, target: str) -> tuple[int, dict[str, str], bytes]:
    """GET `target` exactly as written (no client-side normalization); (status, headers, body)."""
    address = urlsplit(base_url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as conn:
        conn.sendall(f"GET {target} HTTP/1.1\r\nHost: {address.netloc}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


@pytest.mark.parametrize("path", PAGES)
def test_every_page_carries_the_one_policy(daphne_server, path):
    status, headers, _ = raw_get(daphne_server.url, path)
    assert status in (200, 404), status
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY


@pytest.mark.parametrize("path", ["/", "/history", "/compare/live", "/batch"])
def test_pages_load_without_violating_it(page: Page, daphne_server, path):
    errors = page_errors(page)
    page.add_init_script(
        "window.__violations = [];"
        "document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective));"
    )
    page.goto(daphne_server.url + path)
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__violations") == []
    assert errors == []


CLIMBING = [
    "/static/../manage.py",
    "/static/%2e%2e/manage.py",
    "/static/%2E%2E/manage.py",
    "/static/..%2fmanage.py",
    "/static/..%2Fmanage.py",
    "/static/%2e%2e%2fmanage.py",
    "/static/playground/../../manage.py",
    "/static/playground/js/../../../playground/settings/base.py",
    "/static/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fetc/passwd",
    "/static/..%5cmanage.py",
    "/static//etc/passwd",
    "/static/%2fetc/passwd",
]


@pytest.mark.parametrize("target", CLIMBING)
def test_static_paths_that_climb_answer_404(daphne_server, target):
    status, _, body = raw_get(daphne_server.url, target)
    assert status == 404, (target, status)
    assert b"SECRET_KEY" not in body and b"execute_from_command_line" not in body and b"root:" not in body


def test_static_files_are_still_served(daphne_server):
    status, headers, body = raw_get(daphne_server.url, "/static/playground/js/param-facts.js")
    assert status == 200 and b"export function enabledStages" in body
    assert raw_get(daphne_server.url, "/static/playground/js/nope.js")[0] == 404


def test_a_run_on_the_playground_violates_nothing(page: Page, daphne_server):
    """Streaming, tinting, the inspector and the charts all work under the policy."""
    errors = page_errors(page)
    page.add_init_script(
        "window.__violations = [];"
        "document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective));"
    )
    page.goto(daphne_server.url + "/?prompt=The+capital+of+France+is&max_tokens=4&seed=1")
    page.locator("#connection[data-connected=true]").wait_for()
    page.get_by_role("button", name="Generate").click()
    page.locator("#status[data-state=done]").wait_for(timeout=90_000)
    page.locator("#output .token").first.click()
    page.locator("#inspector").wait_for()
    assert page.evaluate("window.__violations") == []
    assert errors == []
