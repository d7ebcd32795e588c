"""The batch view (/batch) and the workers' load (GET /api/load, the main page's indicator) against
a real daphne, the real model and Debian's Chromium. Every check compares what the page shows with
the websocket frames (or the JSON) the server sent."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.playground_page import PlaygroundPage
from tests.servers import Daphne

pytestmark = pytest.mark.e2e

LANES = [  # (prompt, mode, max_tokens, seed): short runs that end at different times
    ("The capital of France is", "completion", 10, 1),
    ("Write a haiku about cats", "chat", 6, 2),
    ("Once upon a time", "completion", 8, 3),
]


class BatchPage(PlaygroundPage):
    """The playground's page object (frames recorded from the page's socket) opened on /batch."""

    def open(self) -> BatchPage:
        self.page.goto(self.base_url + "/batch")
        self.page.locator("#connection[data-connected=true]").wait_for()
        return self

    def set_lanes(self, lanes: list[tuple[str, str, int, int]]) -> None:
        page = self.page
        while page.locator("fieldset.lane-settings").count() > len(lanes):
            page.get_by_role("button", name="Remove the last lane").click()
        while page.locator("fieldset.lane-settings").count() < len(lanes):
            page.get_by_role("button", name="Add a lane").click()
        for n, (prompt, mode, max_tokens, seed) in enumerate(lanes, start=1):
            page.locator(f"#lane{n}-prompt").fill(prompt)
            page.locator(f"#lane{n}-mode").select_option(mode)
            page.locator(f"#lane{n}-max_tokens").fill(str(max_tokens))
            page.locator(f"#lane{n}-seed").fill(str(seed))

    def wait_ended(self, timeout_ms: float = 120_000) -> str:
        self.page.locator("#batch-status[data-state=done], #batch-status[data-state=error]").wait_for(timeout=timeout_ms)
        self.page.locator("[data-action=run-together]:enabled").wait_for(timeout=timeout_ms)
        return self.page.locator("#batch-status").get_attribute("data-state") or ""

    def lane_frames(self) -> list[list[dict[str, Any]]]:
        """Each sent generate's received frames, in the order the generates were sent."""
        generates = self.sent_of("generate")
        return [[f for f in self.frames if f.get("request_id") == g["request_id"]] for g in generates]


@pytest.fixture
def batch(page: Page, daphne_server: Daphne, artifacts: Path) -> Iterator[BatchPage]:
    page.add_init_script(
        "window.__violations = [];"
        "document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective));"
    )
    view = BatchPage(page, daphne_server.url, artifacts).open()
    yield view
    assert view.errors == [], f"JavaScript errors on the page: {view.errors}"
    assert page.evaluate("window.__violations") == [], "the page broke its Content-Security-Policy"


def get_json(server: Daphne, path: str) -> tuple[dict[str, Any], dict[str, str]]:
    with urllib.request.urlopen(server.url + path, timeout=30) as response:
        return json.loads(response.read()), dict(response.headers)


def test_lanes_are_sent_together_stream_and_each_ends(batch: BatchPage) -> None:
    page = batch.page
    batch.set_lanes(LANES)
    page.get_by_role("button", name="Run together").click()
    assert batch.wait_ended() == "done", page.locator("#batch-status").text_content()

    generates = batch.sent_of("generate")
    assert [(g["prompt"], g["mode"], g["params"]["max_tokens"], g["params"]["seed"]) for g in generates] == LANES
    # All three went out at once, one after another on the page's one socket.
    assert [f["type"] for f in batch.sent] == ["generate"] * 3

    for n, frames in enumerate(batch.lane_frames(), start=1):
        tokens = [f for f in frames if f["type"] == "token"]
        done = frames[-1]
        assert done["type"] == "done", frames[-1]
        assert [t["index"] for t in tokens] == list(range(len(tokens)))
        lane = page.locator(f".lane[data-lane='{n}']")
        expect(lane).to_have_attribute("data-state", "done")
        expect(lane.locator(".lane-state")).to_contain_text(f"done: {done['reason']}")
        shown = lane.locator(".token").evaluate_all("els => els.map(el => el.textContent)")
        assert shown == [t["text"] for t in tokens]
        assert lane.locator(".lane-output").evaluate("el => el.textContent") == done["text"]
        expect(lane.locator("[data-stat=tokens]")).to_have_text(str(done["usage"]["completion_tokens"]))
    expect(page.locator("#throughput [data-stat=together]")).to_contain_text("tokens/s")
    batch.shot("batch-01-together")


def test_a_lanes_token_is_inspectable_as_on_the_main_page(batch: BatchPage) -> None:
    page = batch.page
    batch.set_lanes(LANES[:2])
    page.get_by_role("button", name="Run together").click()
    assert batch.wait_ended() == "done"
    lane_frames = batch.lane_frames()

    second = [f for f in lane_frames[1] if f["type"] == "token"]
    page.locator(".lane[data-lane='2'] .token").nth(1).click()
    batch.assert_inspector_matches(second[1])
    expect(page.locator(".lane[data-lane='2'] .token").nth(1)).to_have_attribute("aria-expanded", "true")

    # Another lane's token takes the inspector over, with that lane's numbers.
    first = [f for f in lane_frames[0] if f["type"] == "token"]
    page.locator(".lane[data-lane='1'] .token").nth(1).click()
    batch.assert_inspector_matches(first[1])
    page.keyboard.press("Escape")
    expect(batch.inspector).to_be_hidden()

    # Keyboard: focus a lane's first token, arrow right, the inspector follows.
    page.locator(".lane[data-lane='2'] .token").first.focus()
    page.keyboard.press("ArrowRight")
    batch.assert_inspector_matches(second[1])


def test_the_step_grid_shows_which_lanes_were_in_each_step(batch: BatchPage) -> None:
    page = batch.page
    batch.set_lanes(LANES)
    page.get_by_role("button", name="Run together").click()
    assert batch.wait_ended() == "done"
    lane_frames = batch.lane_frames()
    tokens = [[f for f in frames if f["type"] == "token"] for frames in lane_frames]
    if not any("batch" in t for lane in tokens for t in lane):
        # A worker that decodes one request at a time says nothing about steps: the page says so.
        expect(page.locator("#step-counter")).to_contain_text("does not report its decode steps")
        assert page.locator("#step-grid rect.lane-cell").count() == 0
        pytest.fail("the worker sent no `batch` field: the step grid cannot be checked (needs continuous batching)")

    steps = {t["batch"]["step"]: t["batch"] for lane in tokens for t in lane}
    for n, lane in enumerate(tokens, start=1):
        cells = page.locator(f"#step-grid rect.lane-cell[data-lane='{n}']")
        expect(cells).to_have_count(len(lane))
        titles = cells.evaluate_all("els => els.map(el => el.querySelector('title').textContent)")
        for t, title in zip(lane, titles):
            assert f"step {t['batch']['step']} ({t['batch']['rows']} rows" in title
    shared = [s for s, b in steps.items() if sum(any(t["batch"]["step"] == s for t in lane) for lane in tokens) > 1]
    assert shared, "no step decoded two lanes together"
    assert max(b["rows"] for b in steps.values()) >= 2
    # Lanes end at different times: each lane's ✕ marks where its slot was freed.
    expect(page.locator("#step-grid .freed-mark")).to_have_count(len(LANES))
    summary = page.locator("#step-grid-summary").text_content()
    assert f"Steps {min(steps)}–{max(steps)}" in summary and f"{len(shared)} of {len(steps)} had two or more lanes" in summary
    latest = max(steps)
    expect(page.locator("#step-counter")).to_contain_text(f"step {latest}: {steps[latest]['rows']} rows")
    started = [next(f for f in frames if f["type"] == "started") for frames in lane_frames]
    max_batch = started[0]["batch"]["max_batch"]
    expect(page.locator("#slots .slot")).to_have_count(max_batch)
    expect(page.locator("#slots .slot.held")).to_have_count(0)  # every lane ended: its slot is free

    # A cell opens its token in the inspector.
    page.locator("#step-grid rect.lane-cell[data-lane='3'][data-index='2']").click()
    batch.assert_inspector_matches(tokens[2][2])
    batch.shot("batch-02-step-grid")


def test_lane_one_alone_against_the_batch(batch: BatchPage) -> None:
    page = batch.page
    batch.set_lanes(LANES[:2])
    page.get_by_role("button", name="Run together").click()
    assert batch.wait_ended() == "done"
    page.get_by_role("button", name="Run lane 1 alone").click()
    assert batch.wait_ended() == "done"
    alone = batch.sent_of("generate")[-1]
    assert (alone["prompt"], alone["params"]["seed"]) == (LANES[0][0], LANES[0][3])
    expect(page.locator("#throughput [data-stat=together]")).to_contain_text("(16 tokens, 2 lanes)")
    expect(page.locator("#throughput [data-stat=alone]")).to_contain_text("(10 tokens)")
    expect(page.locator("#throughput [data-stat=ratio]")).to_have_text(re.compile(r"^× \d+\.\d\d$"))
    expect(page.locator(".lane[data-lane='2']")).to_have_attribute("data-state", "idle")


def test_a_lanes_error_shows_beside_its_field_and_the_others_run(batch: BatchPage) -> None:
    page = batch.page
    batch.set_lanes(LANES[:2])
    page.locator("#lane2-temperature").fill("5")
    page.get_by_role("button", name="Run together").click()
    assert batch.wait_ended() == "error"
    error = batch.lane_frames()[1][-1]
    assert error["type"] == "error" and error["error"]["param"] == "params.temperature"
    shown = error["error"]["message"].replace("params.temperature", "Temperature")  # the page's name for it
    assert shown.startswith("Temperature must be")
    expect(page.locator("#lane2-temperature-error")).to_have_text(shown)
    expect(page.locator("#lane2-temperature")).to_have_attribute("aria-invalid", "true")
    expect(page.locator(".lane[data-lane='2']")).to_have_attribute("data-state", "failed")
    expect(page.locator(".lane[data-lane='1']")).to_have_attribute("data-state", "done")


def test_the_batch_view_is_linked_from_the_main_page(playground: PlaygroundPage) -> None:
    playground.page.get_by_role("link", name="Batch").click()
    expect(playground.page).to_have_url(re.compile(r"/batch$"))
    expect(playground.page.get_by_role("heading", name="Batched generation")).to_be_visible()


def test_api_load_reports_what_the_workers_answer(daphne_server: Daphne) -> None:
    load, headers = get_json(daphne_server, "/api/load")
    assert "no-cache" in headers.get("Cache-Control", "") or "no-store" in headers.get("Cache-Control", "")
    assert load["workers"], load  # the embedded worker answered its ping
    assert all(isinstance(w["pid"], int) and w["host"] for w in load["workers"])
    if load["available"]:
        assert set(load["total"]) == {"running", "rows", "waiting", "max_batch"}
        assert all(isinstance(v, int) and v >= 0 for v in load["total"].values())
        assert load["total"]["max_batch"] >= 1
    else:
        assert load["reason"] == "the workers do not report their load"
        pytest.fail("the worker's ping answer has no `load` (needs the batching worker)")


LOAD_LINE = re.compile(
    r"Worker load at [^:]+:\d\d:\d\d[^:]*: (\d+) streams? decoding \((\d+) of (\d+) batch rows in use\), (\d+) waiting\."
)


def run_events(page: Page) -> int:
    """How many run events (starts, ends) the page's load line has been told of so far."""
    return int(page.evaluate('Number(document.querySelector("#worker-load").dataset.runEvents || 0)'))


def shown_load(page: Page, *after: str, since: int = 0) -> tuple[int, int, int, int]:
    """The load line once it shows an answer asked for after one of the page's own run's `after`
    events (`data-after`: the line knows of it) later than its first `since` run events (an earlier
    run's `done` is no answer about this one), read at once with that mark: running, rows,
    max_batch, waiting."""
    line = page.wait_for_function(
        """([names, since]) => {
          const el = document.querySelector("#worker-load");
          const known = el && !el.hidden && names.includes(el.dataset.after) && Number(el.dataset.afterSeq) > since;
          return known ? el.textContent : null;
        }""",
        arg=[list(after), since],
        timeout=30_000,
    ).json_value()
    shown = LOAD_LINE.fullmatch(line)
    assert shown, line
    running, rows, max_batch, waiting = (int(g) for g in shown.groups())
    return running, rows, max_batch, waiting


def test_the_main_page_shows_the_workers_load_when_a_run_is_sent(playground: PlaygroundPage, daphne_server: Daphne) -> None:
    """The line is asked afresh when the page's own run starts and ends (issue 30: it showed "0
    streams decoding" while another stream decoded, and a finished run as still waiting), so each
    assertion holds whatever the timing: it waits for a line that knows of the event, never for time."""
    from websockets.sync.client import connect

    page = playground.page
    load, _ = get_json(daphne_server, "/api/load")
    if not load["available"]:
        pytest.fail("the workers report no load (needs the batching worker): the indicator stays hidden")
    max_batch = load["total"]["max_batch"]
    # Another client keeps the worker busy until it is cancelled, so the page's run has company.
    with connect(daphne_server.url.replace("http", "ws") + "/ws/generate/", origin=daphne_server.url) as other:
        other.send(
            json.dumps(
                {
                    "type": "generate",
                    "request_id": "busy",
                    "prompt": "Once upon a time",
                    "params": {"max_tokens": 4000, "ignore_eos": True, "temperature": 0},  # cancelled below
                }
            )
        )
        while json.loads(other.recv(timeout=60))["type"] != "token":
            pass
        playground.generate("The capital of France is", temperature=0, max_tokens=4)
        # Asked after the page's run started (or, if it was that quick, ended): the busy stream decodes.
        running, rows, shown_batch, _ = shown_load(page, "started", "done")
        assert running >= 1 and rows >= 1 and shown_batch == max_batch
        playground.wait_done()
        running, rows, _, _ = shown_load(page, "done")  # the page's run has ended; the busy one still decodes
        assert running >= 1 and rows >= 1
        other.send(json.dumps({"type": "cancel", "request_id": "busy"}))
    # Followed while the workers are busy, the line comes to rest on idle workers once both have ended.
    expect(page.locator("#worker-load")).to_contain_text(
        f": 0 streams decoding (0 of {max_batch} batch rows in use), 0 waiting.", timeout=60_000
    )
    # A run alone: the line asked after its `done` shows nothing left of it, not "1 waiting" (the
    # first run's `done` still marks the line until this run starts: only this run's events count).
    before = run_events(page)
    playground.generate("The capital of France is", temperature=0, max_tokens=3)
    playground.wait_done()
    assert shown_load(page, "done", since=before) == (0, 0, max_batch, 0)
