"""Every token knows how it got there (issue 30): what the page shows for each origin equals the
`token` frames and offers nothing that cannot work — the inspector, the draw bar, the walk, the
tint, the tree and the saved page for typed, branched and grammar-forced tokens; the guided walk by
mouse, touch and keyboard keeps the alternatives open and points at a real box at every step; a
grammar-removed alternative is never offered as a branch, and an edit the grammar refuses leaves no
dead branch and no raw library message; a keyboard Branch leaves focus on the new run's output;
"Score this text" shows prompt tokens with no "final" column and tints them by their entropy."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.playground_page import PlaygroundPage, format_prob, quote_token
from tests.e2e.test_grammar import choose

pytestmark = pytest.mark.e2e

PROMPT = "The capital of France is"
EDIT = " Lyon, of course"
NOT_DRAWN = ("Chosen with", "✓ chosen", "Random draw u")  # what only a drawn token's panel says


def assert_not_drawn(inspector, token: dict, says: str) -> None:
    """The open inspector describes `token` (a frame not picked by the draw) truthfully."""
    expect(inspector).to_contain_text(says)
    for words in NOT_DRAWN:
        expect(inspector).not_to_contain_text(words)
    expect(inspector.locator("svg.draw-bar")).to_have_count(0)  # no u anywhere on a bar
    expect(inspector.locator(".model-prob")).to_have_text(format_prob(token["raw_prob"]))
    expect(inspector.locator(".final-prob")).to_have_text(format_prob(token["prob"]))


def edit_at(playground: PlaygroundPage, index: int, text: str) -> None:
    page = playground.page
    playground.tokens.nth(index).click()
    page.get_by_label("Text from this token on (edit it freely)", exact=True).fill(text)
    playground.frames.clear()
    page.get_by_role("button", name="Continue from the edit").click()


# -- typed tokens: inspector, draw bar, walk, tint, tree, saved page ------------------------------


def test_typed_tokens_say_so_everywhere_and_show_no_draw(playground: PlaygroundPage, browser: Browser) -> None:
    page = playground.page
    playground.run(PROMPT, max_tokens=6, seed=7)
    edit_at(playground, 2, EDIT)
    expect(page.locator("#branches button.branch")).to_have_count(2)  # launched: the status left "done"
    done = playground.wait_done()
    tokens = playground.events("token")
    typed = [t for t in tokens if t["origin"] == "typed"]
    assert "".join(t["text"] for t in typed) == EDIT and all(t["forced"] and t["draw"] is not None for t in typed)
    assert {t["origin"] for t in tokens[:2]} <= {"sampled"}  # kept, and what this run's own draws pick
    assert {t["origin"] for t in tokens[2 + len(typed) :]} == {"sampled"}

    first = typed[0]
    element = playground.tokens.nth(first["index"])
    expect(element).to_have_attribute("data-origin", "typed")
    assert float(element.get_attribute("data-prob")) == first["prob"]  # the tint: the model's numbers for it
    element.click()
    inspector = playground.inspector
    assert_not_drawn(inspector, first, "Typed by you")
    expect(inspector.locator("tr[aria-current=true] .chosen-mark")).to_have_text("typed by you")
    column = page.locator(f"#strip-chart rect.hit[data-index='{first['index']}'] title")  # the chart across the output
    expect(column).to_have_text(
        f"Token {first['index'] + 1} {quote_token(first['text'])}: typed by you, final probability {format_prob(first['prob'])}"
        f", entropy {first['entropy']['before']:.2f} nats"
    )

    page.get_by_role("button", name="Walk through this step of the loop").click()
    walk = page.locator("#walk")
    for _ in range(4):
        walk.get_by_role("button", name="Next").click()
    expect(walk.locator("[data-walk-text]")).to_contain_text(f"No draw chose {quote_token(first['token'])}: you typed it")
    expect(walk.locator("[data-walk-text]")).not_to_contain_text("u =")
    expect(page.locator(".walk-target")).to_be_visible()
    page.keyboard.press("Escape")

    # A sampled token of the same run still shows its draw, where it fell.
    sampled = tokens[-1]
    playground.tokens.nth(sampled["index"]).click()
    expect(inspector.locator(".chosen-prob")).to_have_text(format_prob(sampled["prob"]))
    expect(inspector.locator("svg.draw-bar")).to_have_attribute("data-draw", repr_js(sampled["draw"]))

    # The saved run says the same, from the server's record; so does a comparison with its parent.
    root_id = playground.sent_of("generate")[-1]["parent_run"]
    saved = browser.new_page()
    try:
        saved.goto(f"{playground.base_url}/r/{done['run_id']}")
        typed_there = saved.locator("#output .token[data-origin=typed]")
        expect(typed_there).to_have_count(len(typed))
        typed_there.first.focus()
        assert_not_drawn(saved.locator("#inspector"), first, "Typed by you")
        bar = saved.locator("[data-testid=strip] rect").nth(first["index"]).locator("title")
        expect(bar).to_have_text(f"token {first['index']}: {first['prob'] * 100:.1f}% (typed by you)")
        saved.goto(f"{playground.base_url}/compare/{root_id},{done['run_id']}")
        cells = saved.locator(".aligned .token[data-origin=typed]")
        expect(cells).to_have_count(len(typed))
        expect(cells.first).to_have_attribute("title", re.compile(r"typed by you$"))
    finally:
        saved.close()


def repr_js(x: float) -> str:
    """JavaScript's String(x) for the draws seen here (shortest round trip, as Python's repr)."""
    return repr(x)


# -- a branch by keyboard: focus, origin, tree ----------------------------------------------------


def test_a_keyboard_branch_leaves_focus_on_the_new_output_and_its_token_says_branch(playground: PlaygroundPage) -> None:
    page = playground.page
    playground.run(PROMPT, max_tokens=5, seed=5, temperature=0.9)
    parent = playground.events("token")
    playground.tokens.nth(1).focus()
    page.keyboard.press("Enter")  # pinned
    alternative = next(a for a in parent[1]["alternatives"] if a["id"] != parent[1]["id"] and a["prob"] > 0)
    button = playground.inspector.locator(f"button[data-branch='{alternative['id']}']")
    button.focus()
    playground.frames.clear()
    page.keyboard.press("Enter")
    expect(page.locator("#output")).to_be_focused()  # at once, while the branch runs
    playground.wait_done()
    expect(page.locator("#output")).to_be_focused()  # and after: never the body
    sent = playground.sent_of("generate")[-1]
    assert sent["branched"] is True and sent["prefix_tokens"] == [parent[0]["id"], alternative["id"]]
    tokens = playground.events("token")
    assert [t["origin"] for t in tokens[:2]] == ["sampled", "branch"]
    assert tokens[0]["draw"] == parent[0]["draw"]  # the kept token: the parent's own draw picks it again
    expect(playground.tokens.nth(1)).to_have_attribute("data-origin", "branch")
    playground.tokens.nth(1).click()
    assert_not_drawn(playground.inspector, tokens[1], "Picked as a branch")
    expect(page.locator("#branches button.branch")).to_have_count(2)


# -- the grammar: branch and edit ----------------------------------------------------------------


def test_a_grammar_removed_alternative_is_not_offered_and_a_refused_edit_leaves_nothing_behind(
    playground: PlaygroundPage,
) -> None:
    page = playground.page
    page.get_by_role("radio", name="Chat", exact=True).check()
    choose(playground, "Choices", "yes\nno")
    playground.run("Describe a person called Ana as JSON.", max_tokens=30, seed=3)
    tokens = playground.events("token")
    assert "".join(t["text"] for t in tokens) in ("yes", "no")
    playground.tokens.nth(0).click()
    inspector = playground.inspector
    for alt in tokens[0]["alternatives"]:
        row = inspector.locator(f"tbody tr[data-id='{alt['id']}']")
        if alt["removed_by"] == "grammar":  # never offered: the constraint cannot take it
            expect(row.locator("button[data-branch]")).to_have_count(0)
            expect(row.locator(".no-branch")).to_have_text("not allowed by the grammar")
        elif alt["id"] != tokens[0]["id"]:
            expect(row.locator("button[data-branch]")).to_have_count(1)
    # A token the grammar left alone says so, with no draw.
    forced = [t for t in tokens if t["origin"] == "forced_by_grammar"]
    assert forced, [t["stages"] for t in tokens]
    playground.tokens.nth(forced[0]["index"]).click()
    expect(inspector).to_contain_text("The grammar allowed only this token")
    expect(inspector.locator("svg.draw-bar")).to_have_count(0)

    # An edit the grammar forbids: refused before it starts, in plain words, and nothing dead stays.
    before = playground.output_text()
    edit_at(playground, 0, "maybe")
    status = page.locator("#status")
    expect(status).to_have_attribute("data-state", "error")
    expect(status).to_contain_text("the grammar does not allow")
    for raw in ("Parser", "byte", "prefix_tokens", "doesn't satisfy"):
        expect(status).not_to_contain_text(raw)
        expect(page.locator("[data-general-error]")).not_to_contain_text(raw)
    expect(page.locator("#branches button.branch")).to_have_count(1)  # the root alone: no "0 tokens" branch
    assert playground.output_text() == before


# -- the guided walk by mouse, touch and keyboard ------------------------------------------------


def open_playground(browser: Browser, daphne_server, artifacts, touch: bool) -> tuple[Page, PlaygroundPage]:
    viewport = {"width": 390, "height": 844} if touch else {"width": 1280, "height": 800}
    context = browser.new_context(viewport=viewport, has_touch=touch)
    page = context.new_page()
    return page, PlaygroundPage(page, daphne_server.url, artifacts).open()


@pytest.mark.parametrize("device", ["mouse", "touch", "keyboard"])
def test_the_walk_keeps_the_alternatives_open_and_points_at_a_real_box(browser, daphne_server, artifacts, device) -> None:
    page, playground = open_playground(browser, daphne_server, artifacts, device == "touch")
    try:
        playground.run(PROMPT, temperature=0.8, top_k=40, seed=3, max_tokens=6)
        token = playground.events("token")[2]
        press = {
            "mouse": lambda locator: locator.click(),
            # (a finger scrolls what it taps to the middle of the screen, clear of the docked panel)
            "touch": lambda locator: (locator.evaluate("el => el.scrollIntoView({block: 'center'})"), locator.tap()),
            "keyboard": lambda locator: (locator.focus(), page.keyboard.press("Enter")),
        }[device]
        press(playground.tokens.nth(2))
        expect(page.locator("#output .token.selected")).to_have_attribute("data-index", "2")  # pinned: its step below
        press(page.get_by_role("button", name="Walk through this step of the loop"))
        walk = page.locator("#walk")
        titles, texts = [], []
        for step in range(6):
            expect(playground.inspector).to_be_visible()  # Next / Back never close what the steps point at
            target = page.locator(".walk-target")
            expect(target).to_have_count(1)
            expect(target).to_be_visible()
            box = target.bounding_box()
            assert box and box["width"] > 0 and box["height"] > 0, (step, box)
            titles.append(walk.locator("[data-walk-title]").text_content())
            texts.append(walk.locator("[data-walk-text]").text_content())
            if step < 5:
                press(walk.get_by_role("button", name="Next"))
        assert titles[4] == "5. The draw" and f"u = {token['draw']:.4f}" in texts[4]
        assert titles[5] == "6. Append"
        press(walk.get_by_role("button", name="Back"))
        expect(walk.locator("[data-walk-title]")).to_have_text("5. The draw")
        expect(playground.inspector).to_be_visible()
        expect(page.locator("#inspector .draw-figure")).to_have_class("draw-figure walk-target")  # the bar itself
        assert playground.errors == []
    finally:
        page.context.close()


# -- Score this text: prompt tokens ---------------------------------------------------------------


def test_scored_prompt_tokens_show_no_sampling_and_are_tinted_by_their_entropy(playground: PlaygroundPage) -> None:
    page = playground.page
    page.get_by_label("Prompt", exact=True).fill(PROMPT)
    playground.frames.clear()
    page.get_by_role("button", name="Score this text").click()
    page.locator("#prompt-surprisal [data-prompt-stream] .token").nth(1).wait_for()
    answer = next(f for f in playground.frames if f.get("type") == "prompt_scores")
    stream = page.locator("#prompt-surprisal [data-prompt-stream] .token")
    expect(stream).to_have_count(len(answer["tokens"]))
    for i, scored in enumerate(answer["tokens"][1:], start=1):
        assert scored["entropy"] is not None
        assert float(stream.nth(i).get_attribute("data-entropy")) == pytest.approx(scored["entropy"])
    assert stream.nth(0).get_attribute("data-entropy") is None
    expect(stream.nth(0)).to_have_attribute(
        "title", re.compile(r"the first token: nothing comes before it, so the model gave it no probability and no entropy")
    )
    page.get_by_role("radio", name="entropy before sampling").check()
    expect(stream.nth(1)).not_to_have_class("untinted")  # tinted, where Score this text left them blank before
    stream.nth(1).click()
    inspector = page.locator("#prompt-surprisal [data-prompt-inspector]")
    expect(inspector).to_be_visible()
    expect(inspector.locator("thead th")).to_have_text(["Token", "Model"])
    expect(inspector).not_to_contain_text("Sampled with")
    expect(inspector).not_to_contain_text("✓ chosen")
    expect(inspector.locator(".step-details")).to_contain_text(f"{answer['tokens'][1]['entropy']:.2f} nats")


# -- a speculative run: accepted drafts ------------------------------------------------------------


def test_an_accepted_draft_and_a_correction_say_how_they_came_and_show_no_draw_bar(playground: PlaygroundPage) -> None:
    from tests.e2e.test_speculative_page import PROMPT as CODE
    from tests.e2e.test_speculative_page import switch_on

    page = playground.page
    page.get_by_label("Prompt", exact=True).fill(CODE)
    playground.set(temperature=0.8, max_tokens=24, seed=11)
    switch_on(playground, k=4)
    playground.frames.clear()
    page.get_by_role("button", name="Generate").click()
    playground.wait_done()
    tokens = playground.events("token")
    drafts = [t for t in tokens if t.get("drafted")]
    assert drafts and all(t["origin"] == "draft" for t in drafts)
    assert {t["origin"] for t in tokens if not t.get("drafted")} == {"sampled", "corrected"}
    draft = drafts[0]
    playground.tokens.nth(draft["index"]).click()
    inspector = playground.inspector
    assert_not_drawn(inspector, draft, "Drafted, then accepted")
    expect(inspector).to_contain_text(f"Acceptance draw u{draft['draw']:.4f}")
    # A correction (drawn from what a rejected draft left): its u is the acceptance test's, not on its bar.
    rejected = [v for v in playground.events("verification") if v["corrected"]]
    assert rejected, "these settings reject a draft"
    at = rejected[0]["index"] + rejected[0]["accepted"]
    corrected = tokens[at]
    assert corrected["id"] == rejected[0]["corrected"]["id"] and corrected["origin"] == "corrected"
    assert [t["index"] for t in tokens if t["origin"] == "corrected"] == [
        v["index"] + v["accepted"] for v in playground.events("verification") if v["corrected"]
    ]
    playground.tokens.nth(at).click()
    assert_not_drawn(inspector, corrected, "Sampled after a rejected draft")
    expect(inspector).to_contain_text(f"Acceptance draw u{corrected['draw']:.4f} (rejected the draft here")


# -- a what-if continuation: the tokens it keeps --------------------------------------------------


def test_a_what_if_continuation_marks_the_tokens_it_keeps_as_its_own_pick_would_not_take_them(
    playground: PlaygroundPage,
) -> None:
    page = playground.page
    playground.run(PROMPT, max_tokens=6, seed=2, temperature=1.5)
    parent = playground.events("token")
    playground.tokens.nth(4).click()  # its step below: the what-if dials
    page.get_by_label("What-if Temperature", exact=True).fill("0")  # greedy from here on
    page.wait_for_function("() => document.querySelector('#what-if').dataset.state === 'ready'")
    playground.frames.clear()
    page.get_by_role("button", name="Continue from here with these settings").click()
    expect(page.locator("#branches button.branch")).to_have_count(2)
    playground.wait_done()
    tokens = playground.events("token")
    assert [t["id"] for t in tokens[:4]] == [t["id"] for t in parent[:4]]
    assert "branched" not in playground.sent_of("generate")[-1]  # nothing picked: a what-if keeps
    # greedy now: a kept token is greedy where it is the top token, else kept (greedy would not pick it)
    for kept, was in zip(tokens[:4], parent[:4]):
        top = max(was["alternatives"], key=lambda a: (a["raw_prob"], -a["id"]))
        assert kept["origin"] == ("greedy" if top["id"] == kept["id"] else "kept")
    assert "kept" in [t["origin"] for t in tokens[:4]], "T 1.5 picked a token below the top in the first four"
    assert {t["origin"] for t in tokens[4:]} == {"greedy"}
    for token in tokens:
        expect(playground.tokens.nth(token["index"])).to_have_attribute("data-origin", token["origin"])
    first_kept = next(t for t in tokens if t["origin"] == "kept")
    playground.tokens.nth(first_kept["index"]).click()
    assert_not_drawn(playground.inspector, first_kept, "Kept from the run this one continues")
