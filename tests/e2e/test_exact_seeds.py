"""Seeds above 2^53 (a JS number's exact range) stay exact on every page that shows or sends one:
the playground's seed field, the seed shown after a run, the address bar, /history, the
permalink (its Replay and "Open in playground"), the live comparison and the batch lanes. A seed
copied from any of them reproduces the run. Checked against the frames the server sent (read in
Python, exactly) and with a real daphne, the real model and Debian's Chromium."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.playground_page import PlaygroundPage, page_errors

pytestmark = pytest.mark.e2e

ISSUE_SEED = 3547710859097758228  # /history showed it as 3547710859097758000
MAX_SEED = 2**63 - 1
PROMPT = "The best thing about autumn is"


def ids(frames: list[dict]) -> list[int]:
    return [frame["id"] for frame in frames if frame["type"] == "token"]


@pytest.mark.parametrize("seed", [ISSUE_SEED, MAX_SEED])
def test_a_seed_round_trips_through_the_page_history_and_permalink(playground: PlaygroundPage, daphne_server, seed):
    page = playground.page
    done = playground.run(PROMPT, temperature=1.2, top_k=0, top_p=1, seed=seed, max_tokens=6)
    tokens = ids(playground.frames)
    assert playground.sent_of("generate")[-1]["params"]["seed"] == seed  # sent as the JSON integer
    assert playground.event("started")["seed"] == seed
    expect(playground.stat("seed")).to_have_text(str(seed))
    assert parse_qs(urlsplit(page.url).query)["seed"] == [str(seed)]

    # /history lists it with its exact seed.
    page.goto(daphne_server.url + "/history")
    row = page.locator(f"[data-testid=history] tbody tr[data-run-id='{done['run_id']}']")
    expect(row).to_contain_text(f"seed {seed};")

    # The permalink shows it, replays it identically, and opens it in the playground.
    page.goto(daphne_server.url + f"/r/{done['run_id']}")
    expect(page.locator("[data-stat=seed]")).to_have_text(str(seed))
    playground.frames.clear()
    page.get_by_role("button", name="Replay").click()
    expect(page.locator("[data-result=identical]")).to_be_visible(timeout=60_000)
    assert ids(playground.frames) == tokens
    page.get_by_role("link", name="Open in playground").click()
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.get_by_label("Seed", exact=True)).to_have_value(str(seed))
    playground.frames.clear()
    page.get_by_role("button", name="Generate").click()
    playground.wait_done()
    assert playground.sent_of("generate")[-1]["params"]["seed"] == seed
    assert ids(playground.frames) == tokens  # the copied seed reproduces the run


def test_a_drawn_seed_is_shown_exactly_and_use_this_seed_reproduces_the_run(playground: PlaygroundPage, daphne_server) -> None:
    page = playground.page
    done = playground.run(PROMPT, temperature=1.2, top_k=0, top_p=1, seed="", max_tokens=6)
    drawn = playground.event("started")["seed"]  # below 2^62: above 2^53 but for 1 draw in 512
    first = ids(playground.frames)
    expect(playground.stat("seed")).to_have_text(f"{drawn} (drawn at random)")
    page.get_by_role("button", name="Use this seed").click()
    expect(page.get_by_label("Seed", exact=True)).to_have_value(str(drawn))
    playground.run()
    assert playground.sent_of("generate")[-1]["params"]["seed"] == drawn
    assert ids(playground.frames) == first
    page.goto(daphne_server.url + "/history")  # where the issue saw a drawn seed rounded
    row = page.locator(f"[data-testid=history] tbody tr[data-run-id='{done['run_id']}']")
    expect(row).to_contain_text(f"seed {drawn};")


def test_the_live_comparison_and_the_batch_lanes_send_seeds_exactly(page: Page, daphne_server) -> None:
    errors = page_errors(page)
    sent: list[dict] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(json.loads(payload))))

    page.goto(daphne_server.url + "/compare/live")
    page.get_by_label("Prompt", exact=True).fill(PROMPT)
    page.get_by_label("Seed", exact=True).fill(str(MAX_SEED))
    page.get_by_label("Max tokens").fill("2")
    page.get_by_role("button", name="Run side by side").click()
    expect(page.get_by_test_id("comparison-link")).to_be_visible(timeout=60_000)
    assert [f["params"]["seed"] for f in sent if f["type"] == "generate"] == [MAX_SEED, MAX_SEED]
    assert parse_qs(urlsplit(page.url).query)["seed"] == [str(MAX_SEED)]
    page.reload()
    expect(page.get_by_label("Seed", exact=True)).to_have_value(str(MAX_SEED))

    sent.clear()
    page.goto(daphne_server.url + "/batch")
    page.locator("#connection[data-connected=true]").wait_for()
    lanes = page.locator("fieldset.lane-settings")
    for n in range(1, lanes.count() + 1):
        page.locator(f"#lane{n}-max_tokens").fill("2")
        page.locator(f"#lane{n}-seed").fill(str(ISSUE_SEED + n))
    page.get_by_role("button", name="Run together").click()
    page.locator("#batch-status[data-state=done]").wait_for(timeout=120_000)
    seeds = [f["params"]["seed"] for f in sent if f["type"] == "generate"]
    assert seeds == [ISSUE_SEED + n for n in range(1, lanes.count() + 1)]
    assert errors == []
