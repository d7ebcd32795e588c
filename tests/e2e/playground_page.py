"""A page object for the playground: how the tests drive the page and read the websocket.

Frames are captured from the page's own websocket (Playwright's `framereceived`), so every check
compares what the page shows with what the server actually sent.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, WebSocket

FIELDS = {
    "temperature": "Temperature",
    "top_p": "Top-p",
    "top_k": "Top-k",
    "min_p": "Min-p",
    "max_tokens": "Max tokens",
    "min_tokens": "Min tokens",
    "seed": "Seed",
    "top_n": "Top-N shown",
    "n": "Samples (n)",
    "num_beams": "Beams",
    "stop": "Stop strings",
}


def format_prob(p: float) -> str:
    """The page's formatProb (static/shared/js/format.js): JS toFixed rounds ties up."""
    if p == 0:
        return "0%"
    if p < 0.00005:
        return "<0.01%"
    return f"{Decimal(p * 100).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)}%"


def quote_token(text: str) -> str:
    """The page's quoteToken: JSON.stringify of the token text."""
    return json.dumps(text, ensure_ascii=False)


def visible_whitespace(text: str) -> str:
    """The page's visibleWhitespace for prompt-token chips."""
    return text.replace("\r", "␍").replace("\n", "↵").replace("\t", "⇥")


def page_errors(page: Page) -> list[str]:
    """A list that fills with the page's uncaught errors and console errors."""
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    return errors


class PlaygroundPage:
    def __init__(self, page: Page, base_url: str, artifacts: Path) -> None:
        self.page = page
        self.base_url = base_url
        self.artifacts = artifacts
        self.frames: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []
        self.errors: list[str] = []
        page.on("websocket", self._watch)
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _watch(self, socket: WebSocket) -> None:
        if socket.url.endswith("/ws/generate/"):
            socket.on("framereceived", lambda payload: self.frames.append(json.loads(payload)))
            socket.on("framesent", lambda payload: self.sent.append(json.loads(payload)))

    # Driving the page.

    def open(self) -> PlaygroundPage:
        self.page.goto(self.base_url + "/")
        self.page.locator("#connection[data-connected=true]").wait_for()
        return self

    def set(self, **settings: Any) -> None:
        for key, value in settings.items():
            control = self.page.get_by_label(FIELDS.get(key, key), exact=True)
            self.open_group_of(control)
            control.fill("" if value is None else str(value))

    def open_group_of(self, control: Locator) -> None:
        """Opens the collapsed settings group (a <details>) that holds `control`."""
        control.evaluate("el => { const d = el.closest('details'); if (d) d.open = true; }")

    def open_group(self, title: str) -> Locator:
        group = self.page.locator("details.param-group", has=self.page.locator("summary", has_text=title))
        group.evaluate("d => { d.open = true; }")
        return group

    def sent_of(self, kind: str) -> list[dict[str, Any]]:
        return [frame for frame in self.sent if frame.get("type") == kind]

    def run(self, prompt: str | None = None, **settings: Any) -> dict[str, Any]:
        """Generates (optionally with a new prompt and settings) and returns the `done` frame."""
        if prompt is not None:
            self.page.get_by_label("Prompt", exact=True).fill(prompt)
        self.set(**settings)
        self.frames.clear()
        self.page.get_by_role("button", name="Generate").click()
        return self.wait_done()

    def wait_idle(self, timeout_ms: float = 90_000) -> None:
        """Waits until the page can start a run again (Generate enabled) and the status is settled."""
        status = self.page.locator("#status")
        self.page.locator("#status[data-state=done], #status[data-state=error]").wait_for(timeout=timeout_ms)
        self.page.locator("[data-action=generate]:enabled").wait_for(timeout=timeout_ms)
        assert status.get_attribute("data-state") == "done", f"{status.text_content()} (frames: {self.frames[-2:]})"

    def request_frames(self, kind: str) -> list[dict[str, Any]]:
        """Received frames answering the sent frames of type `kind` (matched by request id)."""
        ids = {frame["request_id"] for frame in self.sent_of(kind)}
        return [frame for frame in self.frames if frame.get("request_id") in ids]

    def generate(self, prompt: str, **settings: Any) -> None:
        self.page.get_by_label("Prompt", exact=True).fill(prompt)
        self.set(**settings)
        self.frames.clear()
        self.page.get_by_role("button", name="Generate").click()

    def wait_done(self, timeout_ms: float = 90_000) -> dict[str, Any]:
        """Waits for the run to end and returns its `done` frame; an error ends the wait too."""
        status = self.page.locator("#status")
        self.page.locator("#status[data-state=done], #status[data-state=error]").wait_for(timeout=timeout_ms)
        assert status.get_attribute("data-state") == "done", f"{status.text_content()} (frames: {self.frames[-2:]})"
        return self.event("done")

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.artifacts / f"{name}.png"), full_page=True)

    # Reading it.

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [frame for frame in self.frames if frame.get("type") == kind]

    def event(self, kind: str) -> dict[str, Any]:
        found = self.events(kind)
        assert len(found) == 1, f"expected one {kind!r} frame, got {len(found)}: {self.frames[-3:]}"
        return found[0]

    @property
    def tokens(self) -> Locator:
        return self.page.locator("#output .token")

    @property
    def inspector(self) -> Locator:
        return self.page.locator("#inspector")

    def stat(self, name: str) -> Locator:
        return self.page.locator(f"[data-stat={name}]")

    def output_text(self) -> str:
        return self.page.locator("#output").evaluate("el => el.textContent")

    def assert_inspector_matches(self, token: dict[str, Any]) -> None:
        """The open inspector shows exactly this `token` frame's numbers."""
        inspector = self.inspector
        assert inspector.is_visible()
        assert inspector.get_attribute("data-index") == str(token["index"])
        assert inspector.locator(".inspector-title .token-text").text_content() == quote_token(token["token"])
        assert inspector.locator(".chosen-prob").text_content() == format_prob(token["prob"])
        assert inspector.locator(".chosen-raw").text_content() == format_prob(token["raw_prob"])
        rows = inspector.locator("tbody tr")
        alternatives = token["alternatives"]
        chosen_listed = any(alt["id"] == token["id"] for alt in alternatives)
        assert rows.count() == len(alternatives) + (0 if chosen_listed else 1)
        for i, alt in enumerate(alternatives):
            row = rows.nth(i)
            assert row.get_attribute("data-id") == str(alt["id"])
            assert row.locator(".tok .token-text").text_content() == quote_token(alt["token"])
            assert row.locator("td.raw .value").text_content() == format_prob(alt["raw_prob"])
            assert row.locator("td.final .value").text_content() == format_prob(alt["prob"])
            assert float(row.get_attribute("data-raw-prob")) == alt["raw_prob"]
            assert float(row.get_attribute("data-prob")) == alt["prob"]
            is_chosen = alt["id"] == token["id"]
            assert (row.locator(".chosen-mark").count() == 1) == is_chosen
            assert (row.get_attribute("aria-current") == "true") == is_chosen
            if alt.get("removed_by"):
                assert row.locator(".removed-by").text_content() == f"removed by {alt['removed_by']}"
