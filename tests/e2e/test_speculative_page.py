"""Speculative decoding on the page, with the real model, a real daphne and Debian's Chromium: a
code-like prompt that repeats itself (prompt lookup finds its drafts there), greedy. The
verification steps, the drafted marks, the totals and "compare without speculation" are checked
against the frames the server sent; the settings go through the address, the saved run's page
shows the same marks and steps, and a bad k is named at its field by the server."""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.playground_page import PlaygroundPage, quote_token

pytestmark = pytest.mark.e2e

# Prompt lookup drafts what followed the last few tokens earlier on: a function written twice and
# begun a third time gives it long matches; where the model departs from the copy it rejects.
PROMPT = (
    "def area(width, height):\n    return width * height\n\n"
    "def area(width, height):\n    return width * height\n\n"
    "def perimeter(width, height):\n    return"
)
SETTINGS = {"temperature": 0, "max_tokens": 40, "seed": 7}


def switch_on(playground: PlaygroundPage, k: int | str = 4, draft: str = "prompt_lookup") -> None:
    page = playground.page
    playground.open_group("Speculative decoding")
    page.get_by_role("checkbox", name="Speculative decoding", exact=True).check()
    page.get_by_label("Draft", exact=True).select_option(draft)
    page.get_by_label("Drafted tokens per step (k)").fill(str(k))


def verdicts(frame: dict) -> list[str]:
    """What the page marks each draft of a `verification` frame, then its corrected or bonus token."""
    marks = ["unjudged" if d["accepted"] is None else "accepted" if d["accepted"] else "rejected" for d in frame["drafted"]]
    if frame["corrected"]:
        marks.append("corrected")
    if frame["bonus"]:
        marks.append("bonus")
    return marks


def check_steps_and_marks(page: Page, verifications: list[dict], tokens: list[dict]) -> None:
    """The page's verification steps and drafted marks are exactly the frames'."""
    steps = page.locator("#speculative-section .verification")
    expect(steps).to_have_count(len(verifications))
    for i, frame in enumerate(verifications):
        step = steps.nth(i)
        assert step.get_attribute("data-index") == str(frame["index"])
        assert step.locator(".draft").evaluate_all("els => els.map((e) => e.dataset.verdict)") == verdicts(frame)
        chips = step.locator(".draft").all_text_contents()
        for chip, draft in zip(chips, frame["drafted"], strict=False):  # the drafts first, in order
            assert chip.startswith(quote_token(draft["token"]))
    drafted = [t["index"] for t in tokens if t.get("drafted")]
    marked = page.locator("#output .token.drafted").evaluate_all("els => els.map((e) => Number(e.dataset.index))")
    assert marked == drafted


def check_counts(page: Page, totals: dict) -> None:
    """What the person sees counts as `done.speculative` does (one definition: drafted, checked,
    accepted): the steps' chips added up, each step's own sentence, and the summary's sentence."""
    steps = page.locator("#speculative-section .verification")
    seen = steps.evaluate_all(
        """els => els.map((step) => {
          const verdicts = [...step.querySelectorAll(".draft")].map((d) => d.dataset.verdict);
          return {
            drafted: verdicts.filter((v) => ["accepted", "rejected", "unjudged"].includes(v)).length,
            checked: verdicts.filter((v) => v === "accepted" || v === "rejected").length,
            accepted: verdicts.filter((v) => v === "accepted").length,
            words: step.querySelector(".verification-words").textContent,
          };
        })"""
    )
    for step in seen:
        said = f"{step['drafted']} drafted" + (f" ({step['checked']} checked)" if step["checked"] < step["drafted"] else "")
        assert f": {said}, " in step["words"], step
    added = {key: sum(step[key] for step in seen) for key in ("drafted", "checked", "accepted")}
    assert added | {"verifications": len(seen)} == {key: totals[key] for key in (*added, "verifications")}
    summary = page.locator("[data-spec-summary]")
    for key in ("drafted", "checked", "accepted"):
        expect(summary).to_have_attribute(f"data-{key}", str(totals[key]))
    drafted = f"{totals['drafted']} drafted" + (
        f" ({totals['checked']} checked)" if totals["checked"] < totals["drafted"] else ""
    )
    expect(summary).to_contain_text(f"{drafted}, {totals['accepted']} accepted in {totals['verifications']} verification passes")
    expect(summary).to_contain_text(f"acceptance rate {100 * totals['accepted'] / totals['checked']:.1f}%")


def test_prompt_lookup_steps_totals_and_compare_without(playground: PlaygroundPage, daphne_server) -> None:
    page = playground.page
    page.get_by_label("Prompt", exact=True).fill(PROMPT)
    playground.set(**SETTINGS)
    switch_on(playground, k=4)
    playground.frames.clear()
    page.get_by_role("button", name="Generate").click()
    done = playground.wait_done()
    sent = playground.sent_of("generate")[-1]
    assert sent["params"]["speculative"] == {"draft": "prompt_lookup", "k": 4}

    verifications = playground.events("verification")
    tokens = playground.events("token")
    judged = [d for frame in verifications for d in frame["drafted"] if d["accepted"] is not None]
    assert any(d["accepted"] for d in judged) and not all(d["accepted"] for d in judged)  # lookup hits and misses
    check_steps_and_marks(page, verifications, tokens)

    # Each draft's line states its own p and q and the rule (greedy: p is 1 for the chain's pick, else 0).
    first = next(frame for frame in verifications if frame["drafted"][0]["accepted"])
    line = page.locator(f"#speculative-section .verification[data-index='{first['index']}'] .check-lines li").first
    expect(line).to_contain_text("p = 1.00, q = 1.00 → accepted with probability min(1, p/q) = 1.00")
    rejected = next(frame for frame in verifications if any(d["accepted"] is False for d in frame["drafted"]))
    line = page.locator(
        f"#speculative-section .verification[data-index='{rejected['index']}'] .check-lines li[data-verdict=rejected]"
    )
    expect(line).to_contain_text("p = 0.00, q = 1.00 → rejected")
    expect(line).to_contain_text(quote_token(rejected["corrected"]["token"]))

    # The totals are the done event's, counted as the frames show them: every drafted token, the
    # checked ones, the accepted ones; the page's summary and steps say the same numbers.
    totals = done["speculative"]
    drafts = [d for frame in verifications for d in frame["drafted"]]
    assert (totals["drafted"], totals["checked"], totals["accepted"], totals["verifications"]) == (
        len(drafts),
        len(judged),
        sum(d["accepted"] for d in judged),
        len(verifications),
    )
    assert totals["checked"] < totals["drafted"]  # some drafts came after a rejection: drafted, never checked
    check_counts(page, totals)
    playground.shot("speculative-steps")

    # Compare without: the same request and seed without speculation; greedy gives the same tokens.
    started = playground.event("started")
    playground.frames.clear()
    page.get_by_role("button", name="Compare without speculation").click()
    result = page.locator("[data-compare-result]")
    expect(result).to_have_attribute("data-identical", "true", timeout=90_000)
    plain_sent = playground.sent_of("generate")[-1]
    assert "speculative" not in plain_sent["params"] and plain_sent["params"]["seed"] == started["seed"]
    assert plain_sent["prompt"] == PROMPT and plain_sent["save"] is False
    plain_tokens = [f["id"] for f in playground.frames if f["type"] == "token" and f["request_id"] == plain_sent["request_id"]]
    assert plain_tokens == [t["id"] for t in tokens]
    plain_done = next(f for f in playground.frames if f["type"] == "done" and f["request_id"] == plain_sent["request_id"])
    expect(result).to_contain_text(f"without {plain_done['timing']['decode_tokens_per_s']:.1f} tokens/s")
    expect(result).to_contain_text(f"With speculation {done['timing']['decode_tokens_per_s']:.1f} tokens/s")
    expect(result).to_contain_text("identical, token for token")

    # The address keeps the settings; a reload restores them.
    expect(page).to_have_url(re.compile(r"[?&]speculative="))
    query = parse_qs(urlsplit(page.url).query)
    assert json.loads(query["speculative"][0]) == {"draft": "prompt_lookup", "k": 4}
    page.reload()
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.get_by_role("checkbox", name="Speculative decoding", exact=True)).to_be_checked()
    expect(page.get_by_label("Draft", exact=True)).to_have_value("prompt_lookup")
    expect(page.get_by_label("Drafted tokens per step (k)")).to_have_value("4")

    # The saved run shows the same marks, steps and totals.
    page.goto(f"{daphne_server.url}/r/{done['run_id']}")
    check_steps_and_marks(page, verifications, tokens)
    check_counts(page, totals)
    playground.shot("speculative-saved-run")

    # "Open in playground" brings the settings back.
    page.get_by_role("link", name="Open in playground").click()
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.get_by_role("checkbox", name="Speculative decoding", exact=True)).to_be_checked()
    expect(page.get_by_label("Drafted tokens per step (k)")).to_have_value("4")


def test_a_bad_k_is_named_at_its_field(playground: PlaygroundPage) -> None:
    page = playground.page
    page.get_by_label("Prompt", exact=True).fill(PROMPT)
    switch_on(playground, k=9)
    playground.frames.clear()
    page.get_by_role("button", name="Generate").click()
    error = page.locator("#speculative-k-error")
    expect(error).to_be_visible(timeout=30_000)
    frame = playground.event("error")["error"]
    assert frame["param"] == "params.speculative.k"
    expect(error).to_have_text(frame["message"].replace("params.speculative.k", "Drafted tokens per step (k)"))
    expect(page.get_by_label("Drafted tokens per step (k)")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Drafted tokens per step (k)")).to_be_focused()


def p_text(x: float) -> str:
    """The page's formatP for a probability of 0, 1 or at least 0.005: two decimals, ties up as JS's toFixed."""
    return f"{Decimal(x).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)}"


def test_a_draft_model_that_cannot_pay_says_why_and_kept_drafting_shows_its_q(playground: PlaygroundPage) -> None:
    page = playground.page
    page.get_by_label("Prompt", exact=True).fill(PROMPT)
    playground.set(temperature=0.8, max_tokens=24, seed=11)
    switch_on(playground, k=3, draft="fast")
    playground.frames.clear()
    page.get_by_role("button", name="Generate").click()
    done = playground.wait_done(timeout_ms=180_000)
    assert playground.sent_of("generate")[-1]["params"]["speculative"] == {"draft": "fast", "k": 3}
    assert not playground.events("verification")  # on this machine the fast draft cannot pay: it never drafts
    reason = done["speculative"]["reason"]
    assert (reason["rule"], reason["tokens"], done["speculative"]["switched_off_at"]) == ("cannot_pay", 4, 0)
    expect(page.locator("[data-spec-summary]")).to_have_text(
        "Speculation never started: even if all 3 drafts were accepted, a pass would make 4 tokens for the cost of "
        f"{reason['steps']:.2f} plain steps on this machine, so every token was decoded plainly."
    )

    # Kept drafting to watch it: every step drafts, and the draft model's q shows.
    page.get_by_label("Keep drafting to watch it").check()
    playground.frames.clear()
    page.get_by_role("button", name="Generate").click()
    done = playground.wait_done(timeout_ms=180_000)
    assert playground.sent_of("generate")[-1]["params"]["speculative"] == {"draft": "fast", "k": 3, "switch_off": False}
    expect(page).to_have_url(re.compile(r"switch_off"))
    verifications = playground.events("verification")
    tokens = playground.events("token")
    check_steps_and_marks(page, verifications, tokens)
    judged = [(frame, d) for frame in verifications for d in frame["drafted"] if d["accepted"] is not None]
    assert judged and any(d["q"] != 1 for _, d in judged)  # a draft model's own distribution, not a point mass
    frame, draft = next((f, d) for f, d in judged if d["p"] >= 0.005 and d["q"] >= 0.005)
    verdict = "accepted" if draft["accepted"] else "rejected"
    line = page.locator(
        f"#speculative-section .verification[data-index='{frame['index']}'] .check-lines li[data-verdict={verdict}]"
    )
    expect(line.first).to_contain_text(f"p = {p_text(draft['p'])}, q = {p_text(draft['q'])} → {verdict}")
    expect(page.locator("[data-spec-summary]")).to_have_attribute("data-drafted", str(done["speculative"]["drafted"]))

    # Sampled: the run without speculation draws differently; the page says what "identical" means here.
    playground.frames.clear()
    page.get_by_role("button", name="Compare without speculation").click()
    result = page.locator("[data-compare-result]")
    expect(result).to_have_attribute("data-identical", re.compile("true|false"), timeout=90_000)
    plain = playground.sent_of("generate")[-1]
    plain_ids = [f["id"] for f in playground.frames if f["type"] == "token" and f["request_id"] == plain["request_id"]]
    assert result.get_attribute("data-identical") == str(plain_ids == [t["id"] for t in tokens]).lower()
    expect(result).to_contain_text("distributed alike, not equal")
