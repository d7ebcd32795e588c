"""Saved runs end to end: a real daphne, the real model, Debian's Chromium.

Two runs are generated through the server's websocket from the browser (same prompt and seed,
different temperature), found in the history page, compared; the comparison's permalink opened in
a fresh browser context shows the same thing; a saved run's Replay says "identical".
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.playground_page import page_errors

pytestmark = pytest.mark.e2e

# Runs the two generations in the page and keeps their ids (and delete tokens) as the playground
# page would: in localStorage, under the history's key.
GENERATE_TWO = """async ([settings]) => {
  const ws = new WebSocket(`ws://${location.host}/ws/generate/`);
  await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = fail; });
  const run = (id, params) => new Promise((ok) => {
    const tokens = [];
    ws.addEventListener("message", (m) => {
      const e = JSON.parse(m.data);
      if (e.request_id !== id) return;
      if (e.type === "token") tokens.push(e.text);
      if (e.type === "done" || e.type === "error") ok({done: e, tokens});
    });
    ws.send(JSON.stringify({type: "generate", request_id: id, prompt: "The best thing about autumn is",
                            params, top_n: 5}));
  });
  const results = [];
  for (const [i, params] of settings.entries()) results.push(await run(`e2e-${i}`, params));
  ws.close();
  const stored = results.map((r) => ({id: r.done.run_id, delete_token: r.done.delete_token, seen: Date.now()}));
  localStorage.setItem("playground.runs.v1", JSON.stringify(stored));
  return results;
}"""


def comparison_snapshot(page: Page) -> dict:
    return {
        "note": page.get_by_test_id("seed-note").inner_text(),
        "first": page.get_by_test_id("first-divergence").inner_text(),
        "differing": page.get_by_test_id("differing").inner_text(),
        "aligned": page.get_by_test_id("aligned").inner_text(),
    }


def test_generate_compare_share_and_replay(page: Page, browser: Browser, daphne_server, artifacts):
    errors = page_errors(page)
    base = daphne_server.url
    page.goto(base + "/history")
    settings = [
        {"temperature": 0.3, "max_tokens": 16, "seed": 11},
        {"temperature": 1.6, "max_tokens": 16, "seed": 11},
    ]
    results = page.evaluate(GENERATE_TWO, [settings])
    for result in results:
        assert result["done"]["type"] == "done", result["done"]
        assert result["done"]["run_id"], result["done"]
    ids = [r["done"]["run_id"] for r in results]

    # History: both runs, searchable, selectable.
    page.reload()
    rows = page.locator("[data-testid=history] tbody tr")
    expect(rows).to_have_count(2)
    page.get_by_label("Search prompts").fill("autumn")
    expect(page.get_by_test_id("history-status")).to_contain_text("2 run(s) whose prompt contains")
    page.get_by_label("Search prompts").fill("no such prompt")
    expect(rows).to_have_count(0)
    page.get_by_label("Search prompts").fill("")
    expect(rows).to_have_count(2)
    for run_id in ids:
        page.get_by_label(f"Select run {run_id} for comparison").check()
    page.get_by_role("button", name="Compare selected").click()
    page.wait_for_url("**/compare/*")
    assert sorted(page.url.rsplit("/", 1)[1].split(",")) == sorted(ids)

    # The comparison: only the temperature differs; same seed, honest note; aligned token by token.
    differing = page.get_by_test_id("differing")
    expect(differing.locator("tr[data-setting='params.temperature']")).to_have_count(1)
    expect(differing.locator("tbody tr")).to_have_count(1)
    expect(page.get_by_test_id("seed-note")).to_contain_text("seed 11")
    longest = max(len(r["tokens"]) for r in results)
    expect(page.locator("[data-testid=aligned] tbody tr[data-index]")).to_have_count(longest)  # one per position
    tint = page.locator(".aligned .token").first.evaluate("el => getComputedStyle(el).backgroundColor")
    assert tint not in ("", "transparent", "rgba(0, 0, 0, 0)")
    page.screenshot(path=str(artifacts / "runs-compare.png"), full_page=True)
    seen = comparison_snapshot(page)

    # The permalink in a fresh context (no localStorage, no cookies) shows the same comparison.
    fresh = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        other = fresh.new_page()
        other_errors = page_errors(other)
        other.goto(page.url)
        assert comparison_snapshot(other) == seen
        assert other_errors == []
    finally:
        fresh.close()

    # A saved run: tokens tinted with the inspector, and Replay reproduces it exactly.
    page.goto(f"{base}/r/{ids[1]}")
    tokens = page.locator("#output .token")
    expect(tokens).to_have_count(len(results[1]["tokens"]))
    assert tokens.evaluate_all("els => els.map(e => e.textContent)") == [t for t in results[1]["tokens"]]
    tokens.first.focus()
    expect(page.locator("#inspector")).to_be_visible()
    expect(page.locator("#inspector .alternatives tbody tr:not(.outside)")).to_have_count(5)  # top_n
    expect(page.locator("#inspector .alternatives tr.chosen")).to_have_count(1)
    page.keyboard.press("Escape")
    expect(page.locator("#inspector")).to_be_hidden()
    page.get_by_role("button", name="Replay").click()
    expect(page.get_by_test_id("replay-result")).to_have_text("Replay: identical. Compare with the replay", timeout=90_000)
    page.screenshot(path=str(artifacts / "runs-permalink-replayed.png"), full_page=True)
    assert errors == []


def test_unknown_run_is_a_404_page(page: Page, daphne_server):
    response = page.goto(daphne_server.url + "/r/" + "x" * 22)
    assert response.status == 404
    expect(page.get_by_test_id("not-found")).to_contain_text("no saved run has the id")


def test_playground_runs_reach_the_history_with_their_delete_token(playground, daphne_server):
    """Runs made on the playground page (Generate, and a branch it starts) are in /history with
    their delete tokens: Delete there removes the run for good."""
    page = playground.page
    done = playground.run("The best thing about autumn is", temperature=0, max_tokens=4)
    run_id = done["run_id"]
    assert run_id and done["delete_token"]
    playground.tokens.nth(1).click()
    token = playground.events("token")[1]
    alternative = next(a for a in token["alternatives"] if a["id"] != token["id"])
    playground.frames.clear()
    playground.inspector.locator(f"tr[data-id='{alternative['id']}'] button[data-branch]").click()
    branch = playground.wait_done()
    assert branch["run_id"]

    stored = page.evaluate("() => JSON.parse(localStorage.getItem('playground.runs.v1'))")
    assert [(r["id"], r["delete_token"]) for r in stored] == [
        (branch["run_id"], branch["delete_token"]),
        (run_id, done["delete_token"]),
    ]

    page.get_by_role("link", name="History").click()
    page.wait_for_url("**/history")
    rows = page.locator("[data-testid=history] tbody tr")
    expect(rows).to_have_count(2)
    row = page.locator(f"[data-testid=history] tbody tr[data-run-id='{run_id}']")
    expect(row).to_contain_text("The best thing about autumn is")
    row.get_by_role("button", name=f"Delete run {run_id}").click()
    expect(page.get_by_test_id("history-status")).to_have_text(f"Deleted run {run_id}.")
    expect(rows).to_have_count(1)
    assert page.request.get(f"{daphne_server.url}/r/{run_id}").status == 404
    assert page.request.get(f"{daphne_server.url}/r/{branch['run_id']}").status == 200


def test_a_run_is_in_the_history_from_its_start(playground, daphne_server):
    """`started` announces the run id and delete token: the page keeps them at once, so a run that
    is stopped (or cut off) mid-stream is in the history too."""
    page = playground.page
    playground.generate("Once upon a time", temperature=1, seed=3, max_tokens=4000, min_tokens=4000)  # stopped long before
    expect(playground.tokens.first).to_be_attached(timeout=30_000)
    started = playground.event("started")
    assert started["run_id"] and started["delete_token"]
    stored = page.evaluate("() => JSON.parse(localStorage.getItem('playground.runs.v1'))")
    assert (stored[0]["id"], stored[0]["delete_token"]) == (started["run_id"], started["delete_token"])
    page.get_by_role("button", name="Stop").click()
    done = playground.wait_done()
    assert done["reason"] == "cancelled" and done["run_id"] == started["run_id"]
    page.goto(daphne_server.url + "/history")
    row = page.locator(f"[data-testid=history] tbody tr[data-run-id='{started['run_id']}']")
    expect(row.get_by_role("button", name=f"Delete run {started['run_id']}")).to_be_visible()


# A beam search over the websocket from the page; returns its `done`.
GENERATE_BEAMS = """async () => {
  const ws = new WebSocket(`ws://${location.host}/ws/generate/`);
  await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = fail; });
  const done = await new Promise((ok) => {
    ws.addEventListener("message", (m) => {
      const e = JSON.parse(m.data);
      if (e.type === "done" || e.type === "error") ok(e);
    });
    ws.send(JSON.stringify({type: "generate", request_id: "beams", prompt: "The capital of France is",
                            params: {num_beams: 2, max_tokens: 5, seed: 3}, top_n: 5}));
  });
  ws.close();
  return done;
}"""


def test_replaying_a_beam_search_compares_the_beams(page: Page, daphne_server):
    errors = page_errors(page)
    base = daphne_server.url
    page.goto(base + "/history")
    done = page.evaluate(GENERATE_BEAMS)
    assert done["type"] == "done" and done["run_id"], done
    assert len(done["beams"]) == 2 and all(b["token_ids"] for b in done["beams"])

    page.goto(f"{base}/r/{done['run_id']}")
    page.get_by_role("button", name="Replay").click()
    result = page.get_by_test_id("replay-result")
    expect(result).to_have_text("Replay: identical. Compare with the replay", timeout=90_000)

    # A saved run whose second beam was altered (an imported export): the replay names where.
    export = page.request.get(f"{base}/r/{done['run_id']}.json").json()
    beam = export["run"]["result"]["beams"][1]["token_ids"]
    position = len(beam) - 1
    saved = beam[position] = beam[position] + 1
    imported = page.request.post(f"{base}/api/runs/import", data=export, headers={"Content-Type": "application/json"})
    assert imported.status == 201, imported.text()
    altered = imported.json()["runs"][0]["id"]
    page.goto(f"{base}/r/{altered}")
    page.get_by_role("button", name="Replay").click()
    expect(result).to_have_text(
        f"Replay: beam 2 differs first at position {position + 1}: saved token id {saved}, "
        f"replay token id {saved - 1}. Compare with the replay",
        timeout=90_000,
    )
    expect(result).to_have_attribute("data-result", "differs")
    assert errors == []
