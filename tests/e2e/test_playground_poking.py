"""Watching and poking at runs: the strip chart and the draw, branching and the tree, what-if
sliders and the temperature explorer, step mode, the no-KV-cache latency plot, n samples and the
beam tree — each checked against the websocket frames the server sent.
"""

from __future__ import annotations

import math

import pytest
from playwright.sync_api import expect

from tests.e2e.playground_page import PlaygroundPage, format_prob, quote_token

pytestmark = pytest.mark.e2e

PROMPT = "The capital of France is"


def ids(frames: list[dict]) -> list[int]:
    return [frame["id"] for frame in frames]


def test_strip_chart_draw_and_visible_whitespace(playground: PlaygroundPage) -> None:
    page = playground.page
    done = playground.run("A shopping list:\n1.", temperature=1, top_p=0.95, seed=4, max_tokens=12)
    tokens = playground.events("token")
    assert len(tokens) == done["usage"]["completion_tokens"]

    # One strip-chart column per token; clicking one pins that token's inspector.
    hits = page.locator("#strip-chart .hit")
    expect(hits).to_have_count(len(tokens))
    expect(page.locator("#strip-chart polyline.prob")).to_have_count(1)
    expect(page.locator("#strip-chart polyline.entropy")).to_have_count(1)
    hits.nth(3).click()
    expect(playground.inspector).to_have_attribute("data-index", "3")
    playground.assert_inspector_matches(tokens[3])
    expect(playground.tokens.nth(3)).to_have_class("token selected")
    expect(page.locator("#strip-chart .selected-column")).to_have_count(1)

    # Where u fell: the marker at the event's draw, inside the chosen token's segment.
    bar = playground.inspector.locator("svg.draw-bar")
    assert float(bar.get_attribute("data-draw")) == tokens[3]["draw"]
    chosen = bar.locator("rect.seg.chosen")
    expect(chosen).to_have_count(1)
    x = float(chosen.get_attribute("x")) / 300
    width = float(chosen.get_attribute("width")) / 300
    assert x - 0.002 <= tokens[3]["draw"] <= x + width + 0.002
    marker = float(bar.locator("line.draw-marker").get_attribute("x1")) / 300
    assert abs(marker - tokens[3]["draw"]) < 0.001
    assert bar.get_attribute("aria-label").startswith(
        f"Cumulative bar of the final probabilities; the draw u = {tokens[3]['draw']:.4f} fell in "
        f"{quote_token(tokens[3]['token'])}'s segment"
    )
    playground.shot("20-strip-chart-draw")

    # The chart is keyboard-operable too.
    page.locator("#strip-chart .strip-focus").focus()
    page.keyboard.press("ArrowRight")
    expect(playground.inspector).to_have_attribute("data-index", "4")
    playground.assert_inspector_matches(tokens[4])

    # Whitespace on demand: the text stays the model's; the marks are shown instead.
    page.keyboard.press("Escape")
    page.get_by_label("Show spaces and newlines (· ↵)").check()
    assert playground.output_text() == done["text"]
    with_space = next(i for i, t in enumerate(tokens) if " " in t["text"])
    shown = playground.tokens.nth(with_space).evaluate("el => getComputedStyle(el, '::after').content")
    assert "·" in shown and " " not in shown.strip('"')
    playground.shot("21-whitespace-visible")


def test_branch_from_an_alternative_builds_a_tree(playground: PlaygroundPage) -> None:
    page = playground.page
    original = playground.run(PROMPT, temperature=0, max_tokens=6, top_n=5)
    parent = playground.events("token")
    started = playground.event("started")

    playground.tokens.nth(1).click()
    expect(playground.inspector).to_have_attribute("data-index", "1")
    alternative = next(a for a in parent[1]["alternatives"] if a["id"] != parent[1]["id"])
    playground.frames.clear()
    playground.inspector.locator(f"tr[data-id='{alternative['id']}'] button[data-branch]").click()
    branch_done = playground.wait_done()
    sent = playground.sent_of("generate")[-1]
    assert sent["prefix_tokens"] == [parent[0]["id"], alternative["id"]]
    assert sent["params"]["seed"] == started["seed"] and sent["params"]["max_tokens"] == 6 - 2
    # Saved runs: the branch is labelled with the run it came from and where.
    assert (sent.get("parent_run"), sent.get("branch_index")) == (original.get("run_id"), 1 if original.get("run_id") else None)
    branch = playground.events("token")
    assert [t.get("forced", False) for t in branch[:2]] == [True, True]
    assert ids(branch[:2]) == sent["prefix_tokens"]
    assert not any(t.get("forced") for t in branch[2:])
    # The forced alternative carries its real trace: the same numbers as in the parent's step.
    forced = branch[1]
    assert forced["raw_prob"] == pytest.approx(alternative["raw_prob"], rel=1e-4)
    assert playground.output_text() == branch_done["text"]
    expect(playground.tokens.nth(1)).to_have_class("token forced")

    # The tree: the original run and one branch, each with its cumulative log-probability.
    nodes = page.locator("#branches button.branch")
    expect(nodes).to_have_count(2)
    expect(nodes.nth(1)).to_have_attribute("aria-current", "true")
    expect(nodes.nth(1).locator(".branch-title")).to_have_text(f"Token 2 → {quote_token(alternative['token'])}")
    for node, frames in ((nodes.nth(0), parent), (nodes.nth(1), branch)):
        logprob = sum(math.log(t["raw_prob"]) for t in frames)
        assert float(node.locator(".branch-numbers").get_attribute("data-logprob")) == pytest.approx(logprob, abs=1e-9)
        expect(node.locator(".branch-numbers")).to_contain_text(f"log p {logprob:.2f} · {len(frames)} tokens")
    playground.shot("22-branch-tree")

    # A branch of the branch, from its third token.
    playground.tokens.nth(2).click()
    second = next(a for a in branch[2]["alternatives"] if a["id"] != branch[2]["id"])
    playground.frames.clear()
    playground.inspector.locator(f"tr[data-id='{second['id']}'] button[data-branch]").click()
    playground.wait_done()
    assert playground.sent_of("generate")[-1]["prefix_tokens"] == [*ids(branch[:2]), second["id"]]
    expect(nodes).to_have_count(3)
    expect(page.locator("#branches ul ul ul button.branch")).to_have_count(1)  # nested under the first branch

    # Move between branches: the original comes back exactly, by keyboard.
    nodes.nth(0).focus()
    page.keyboard.press("Enter")
    expect(nodes.nth(0)).to_have_attribute("aria-current", "true")
    assert playground.output_text() == original["text"]
    expect(playground.tokens).to_have_count(len(parent))
    playground.tokens.nth(1).hover()
    playground.assert_inspector_matches(parent[1])


def test_what_if_sliders_reshape_the_real_distribution(playground: PlaygroundPage) -> None:
    page = playground.page
    playground.run(PROMPT, temperature=0.7, top_p=1, seed=3, max_tokens=5, top_n=5)
    tokens = playground.events("token")
    playground.tokens.nth(1).click()
    what_if = page.locator("#what-if")
    expect(what_if).to_have_attribute("data-state", "ready", timeout=20_000)

    def last_inspection_with(temperature: float, **others: float) -> dict:
        for sent in reversed(playground.sent_of("inspect")):
            params = sent["params"]
            if (
                "variants" not in sent
                and params["temperature"] == temperature
                and all(params.get(k) == v for k, v in others.items())
            ):
                answer = next(f for f in playground.frames if f.get("request_id") == sent["request_id"])
                assert sent["prefix_tokens"] == [tokens[0]["id"]]
                assert sent["prompt"] == PROMPT
                return answer
        raise AssertionError(f"no inspect sent with temperature {temperature} {others}")

    def assert_bars(answer: dict) -> None:
        trace = answer["traces"][0]
        rows = what_if.locator("tbody tr")
        expect(rows).to_have_count(len(trace["alternatives"]))
        for i, alt in enumerate(trace["alternatives"]):
            row = rows.nth(i)
            assert row.get_attribute("data-id") == str(alt["id"])
            assert float(row.get_attribute("data-prob")) == alt["prob"]
            assert row.locator("td.final .value").text_content() == format_prob(alt["prob"])
            assert row.locator("td.raw .value").text_content() == format_prob(alt["raw_prob"])

    # At the run's own settings the what-if numbers are the run's own numbers at that step.
    first = last_inspection_with(0.7)
    assert first["position"] == 1
    shown = len(tokens[1]["alternatives"])  # the run asked for 5, the what-if for 10
    assert [a["id"] for a in first["traces"][0]["alternatives"][:shown]] == [a["id"] for a in tokens[1]["alternatives"]]
    for alt, seen in zip(first["traces"][0]["alternatives"], tokens[1]["alternatives"]):
        assert alt["raw_prob"] == pytest.approx(seen["raw_prob"], abs=1e-6)
        assert alt["prob"] == pytest.approx(seen["prob"], abs=1e-6)
    assert_bars(first)
    top_before = float(what_if.locator("tbody tr").first.get_attribute("data-prob"))

    # Temperature 2 flattens the distribution: the top token's bar shrinks.
    page.get_by_label("What-if Temperature", exact=True).fill("2")
    page.wait_for_function(
        "() => document.querySelector('#what-if').dataset.sequence > '1' && "
        "document.querySelector('#what-if').dataset.state === 'ready'"
    )
    expect(page.locator("#what-if output[for=what-if-temperature]")).to_have_text("2")
    page.wait_for_timeout(200)
    hot = last_inspection_with(2)
    expect(what_if.locator("tbody tr").first).to_have_attribute("data-prob", str(hot["traces"][0]["alternatives"][0]["prob"]))
    assert_bars(hot)
    assert float(what_if.locator("tbody tr").first.get_attribute("data-prob")) < top_before

    # Top-k 2 keeps two tokens; the others are removed by top_k.
    page.get_by_label("What-if Top-k", exact=True).fill("2")
    expect(what_if.locator(".stages-kept")).to_contain_text("top_k: 2", timeout=10_000)
    narrow = last_inspection_with(2, top_k=2)
    assert_bars(narrow)
    expect(what_if.locator(".removed-by").first).to_have_text("removed by top_k")
    assert sum(1 for a in narrow["traces"][0]["alternatives"] if a["prob"] > 0) == 2
    playground.shot("23-what-if")

    # The temperature explorer: five temperatures side by side, from one inspect with variants.
    explorer = page.locator("#temperature-explorer")
    expect(explorer).to_have_attribute("data-state", "ready")
    sent = next(s for s in reversed(playground.sent_of("inspect")) if "variants" in s)
    assert [v["temperature"] for v in sent["variants"]] == [0.1, 0.5, 1, 1.5, 2]
    answer = next(f for f in playground.frames if f.get("request_id") == sent["request_id"])
    assert len(answer["traces"]) == 5
    rows = explorer.locator("tbody tr[data-id]")
    for i, alt in enumerate(answer["traces"][0]["alternatives"]):
        cells = rows.nth(i).locator("td")
        for j, trace in enumerate(answer["traces"]):
            p = next(a["prob"] for a in trace["alternatives"] if a["id"] == alt["id"])
            assert float(cells.nth(j).get_attribute("data-prob")) == p
    top = [float(rows.first.locator("td").nth(j).get_attribute("data-prob")) for j in range(5)]
    assert top == sorted(top, reverse=True)  # the top token loses mass as T rises
    entropies = [float(x) for x in explorer.locator("tr.entropy td").all_text_contents()]
    assert entropies == sorted(entropies)
    # top ÷ second at a readable size (it printed 31,000,231,646,288× at T 0.1), the exact ratio on hover
    ratios = explorer.locator("tr.ratio td")
    for j, trace in enumerate(answer["traces"]):
        first, second = sorted((a["prob"] for a in trace["alternatives"]), reverse=True)[:2]
        assert len(ratios.nth(j).text_content()) <= 14, ratios.nth(j).text_content()
        if second > 0:
            exact = float(ratios.nth(j).get_attribute("title").split(" times")[0].replace(",", ""))
            assert exact == pytest.approx(first / second, rel=1e-3, abs=0.05)

    # "Continue from here with these settings" starts a branch at this step with the dials.
    playground.frames.clear()
    page.get_by_role("button", name="Continue from here with these settings").click()
    playground.wait_done()
    generate = playground.sent_of("generate")[-1]
    assert generate["prefix_tokens"] == [tokens[0]["id"]]
    assert generate["params"]["temperature"] == 2 and generate["params"]["top_k"] == 2
    expect(page.locator("#branches button.branch")).to_have_count(2)
    expect(page.locator("#branches button.branch").nth(1)).to_contain_text("what-if settings")


def test_step_mode_one_token_per_click_and_key(playground: PlaygroundPage) -> None:
    page = playground.page
    full = playground.run(PROMPT, temperature=1, seed=11, max_tokens=4)
    reference = playground.events("token")

    # A fresh page, stepping the same settings one token at a time: the draws line up (the address
    # is written a moment after the last change: wait for it first).
    page.wait_for_function("() => location.search.includes('max_tokens=4') && location.search.includes('seed=11')")
    page.goto(playground.page.url)
    page.locator("#connection[data-connected=true]").wait_for()
    step = page.get_by_role("button", name="Step")
    step.click()
    playground.wait_idle()
    expect(playground.tokens).to_have_count(1)
    for count in (2, 3):
        step.click()
        playground.wait_idle()
        expect(playground.tokens).to_have_count(count)
    page.locator("body").press("Alt+n")  # the key
    expect(playground.tokens).to_have_count(4)
    playground.wait_idle()
    steps = playground.sent_of("generate")[-4:]
    assert [len(s.get("prefix_tokens", [])) for s in steps] == [0, 1, 2, 3]
    assert all(s["params"]["max_tokens"] == 1 for s in steps)
    assert steps[-1]["prefix_tokens"] == ids(reference[:3])
    shown = playground.tokens.evaluate_all("els => els.map(el => el.textContent)")
    assert "".join(shown) == full["text"]
    # The newest token was drawn, not forced, with the same draw u as in the full run.
    newest = [f for f in playground.frames if f.get("type") == "token"][-1]
    assert newest["index"] == 3 and not newest.get("forced")
    assert newest["id"] == reference[3]["id"] and newest["draw"] == reference[3]["draw"]
    playground.tokens.last.hover()
    playground.assert_inspector_matches(newest)
    playground.shot("24-step-mode")


def test_no_kv_cache_latency_plot_compares_both(playground: PlaygroundPage) -> None:
    page = playground.page
    playground.run(PROMPT, temperature=0, max_tokens=10)
    cached = [t["elapsed_ms"] for t in playground.events("token")]
    playground.open_group("Run and display")
    page.get_by_label("No KV cache", exact=True).check()
    playground.run()
    assert playground.sent_of("generate")[-1]["use_cache"] is False
    uncached = [t["elapsed_ms"] for t in playground.events("token")]
    assert playground.output_text() == playground.event("done")["text"]

    chart = page.locator("#latency-chart")
    for kind, values in (("cached", cached), ("uncached", uncached)):
        marks = chart.locator(f"g[data-kind={kind}] .mark")
        expect(marks).to_have_count(len(values))
        assert [float(m) for m in marks.evaluate_all("els => els.map(el => el.dataset.ms)")] == values
    expect(page.locator("#latency-summary")).to_contain_text("with the KV cache: median")
    expect(page.locator("#latency-summary")).to_contain_text("without it: median")
    page.locator("#latency-section").scroll_into_view_if_needed()
    playground.shot("25-latency-cache-vs-none")


def test_n_samples_view_shows_where_they_diverge(playground: PlaygroundPage) -> None:
    page = playground.page
    done = playground.run("My favourite colour is", temperature=1.2, seed=21, max_tokens=6, n=3)
    by_sample: dict[int, list[dict]] = {}
    for token in playground.events("token"):
        by_sample.setdefault(token["sample"], []).append(token)
    assert sorted(by_sample) == [0, 1, 2] and len(done["samples"]) == 3
    rows = page.locator("#samples li.sample")
    expect(rows).to_have_count(3)
    for s, frames in by_sample.items():
        row = rows.nth(s)
        spans = row.locator(".sample-token")
        expect(spans).to_have_count(len(frames))
        other = ids(by_sample[1 if s == 0 else 0])
        mine = ids(frames)
        at = next(
            (i for i in range(min(len(mine), len(other))) if mine[i] != other[i]),
            None if len(mine) == len(other) else min(len(mine), len(other)),
        )
        assert row.get_attribute("data-diverge") == ("" if at is None else str(at))
        if at is not None and at < len(mine):
            expect(spans.nth(at)).to_have_class("sample-token diverge")
            assert row.locator(".sample-token.shared").count() == at
    # The main output shows sample 0.
    assert playground.output_text() == done["samples"][0]["text"]
    assert playground.tokens.evaluate_all("els => els.map(e => e.textContent)") == [t["text"] for t in by_sample[0]]
    page.locator("#samples-section").scroll_into_view_if_needed()
    playground.shot("26-n-samples")


def test_beam_tree_shows_kept_and_pruned_beams(playground: PlaygroundPage) -> None:
    page = playground.page
    done = playground.run(PROMPT, temperature=0, max_tokens=5, num_beams=3)
    steps = playground.events("beam_step")
    assert steps and playground.events("token") == []
    tree = page.locator("#beam-tree svg.beam-tree")
    expect(tree).to_be_visible()
    for kind, key in (("kept", "beams"), ("pruned", "pruned"), ("finished", "finished")):
        nodes = tree.locator(f"g.beam-node[data-kind={kind}]")
        expect(nodes).to_have_count(sum(len(s[key]) for s in steps))
    first = steps[0]
    kept = tree.locator("g.beam-node[data-kind=kept][data-step='0']")
    assert [float(v) for v in kept.evaluate_all("els => els.map(e => e.dataset.cumLogprob)")] == [
        b["cum_logprob"] for b in first["beams"]
    ]
    label = quote_token(first["beams"][0]["token"])
    expect(kept.first.locator(".beam-token")).to_have_text(label if len(label) <= 13 else label[:12] + "…")
    hypotheses = page.locator("#beam-hypotheses li")
    expect(hypotheses).to_have_count(len(done["beams"]))
    expect(hypotheses.first).to_contain_text(quote_token(done["samples"][0]["text"]))
    expect(page.locator("#output")).to_have_text(done["text"])
    page.locator("#beam-section").scroll_into_view_if_needed()
    playground.shot("27-beam-tree")


def test_step_with_min_tokens_reproduces_the_full_run(playground: PlaygroundPage) -> None:
    """max_tokens and min_tokens count the tokens after prefix_tokens: each step asks for one token
    and keeps end-of-sequence suppressed exactly while the full run did."""
    page = playground.page
    full = playground.run(PROMPT, temperature=1, seed=11, max_tokens=4, min_tokens=3)
    reference = playground.events("token")
    assert len(reference) == 4

    # the address is written a moment after the last change (debounced): wait for it, then reload it
    page.wait_for_function("() => location.search.includes('min_tokens=3') && location.search.includes('seed=11')")
    page.goto(playground.page.url)  # the same settings, from the address
    page.locator("#connection[data-connected=true]").wait_for()
    expect(page.get_by_label("Min tokens", exact=True)).to_have_value("3")
    step = page.get_by_role("button", name="Step")
    for count in range(1, 5):
        playground.frames.clear()
        step.click()
        playground.wait_idle()
        expect(playground.tokens).to_have_count(count)
        newest = playground.events("token")[-1]
        assert newest["index"] == count - 1 and not newest.get("forced")
        assert (newest["id"], newest["draw"]) == (reference[count - 1]["id"], reference[count - 1]["draw"])
    steps = playground.sent_of("generate")[-4:]
    assert [s["params"]["max_tokens"] for s in steps] == [1, 1, 1, 1]
    assert [s["params"].get("min_tokens", 0) for s in steps] == [1, 1, 1, 0]
    assert [len(s.get("prefix_tokens", [])) for s in steps] == [0, 1, 2, 3]
    assert "".join(playground.tokens.evaluate_all("els => els.map(el => el.textContent)")) == full["text"]


def test_branches_of_branches_keep_the_whole_length_and_minimum(playground: PlaygroundPage) -> None:
    """A branch asks for the parent's total length (its own prefix included) and the same minimum."""
    page = playground.page
    playground.run(PROMPT, temperature=0, max_tokens=6, min_tokens=5, top_n=5)
    root = playground.events("token")
    assert len(root) == 6

    playground.tokens.nth(1).click()
    alternative = next(a for a in root[1]["alternatives"] if a["id"] != root[1]["id"])
    playground.frames.clear()
    playground.inspector.locator(f"tr[data-id='{alternative['id']}'] button[data-branch]").click()
    playground.wait_done()
    sent = playground.sent_of("generate")[-1]
    assert len(sent["prefix_tokens"]) == 2
    assert (sent["params"]["max_tokens"], sent["params"]["min_tokens"]) == (4, 3)
    branch = playground.events("token")
    assert len(branch) == 6

    # A branch of that branch, at its third token: prefix 3, so 3 more tokens, at least 2.
    playground.tokens.nth(2).click()
    expect(playground.inspector).to_have_attribute("data-index", "2")
    second = next(a for a in branch[2]["alternatives"] if a["id"] != branch[2]["id"])
    playground.frames.clear()
    playground.inspector.locator(f"tr[data-id='{second['id']}'] button[data-branch]").click()
    done = playground.wait_done()
    sent = playground.sent_of("generate")[-1]
    assert sent["prefix_tokens"] == [*ids(branch[:2]), second["id"]]
    assert (sent["params"]["max_tokens"], sent["params"]["min_tokens"]) == (3, 2)
    assert len(playground.events("token")) == 6 and done["reason"] == "max_tokens"
    expect(playground.tokens).to_have_count(6)
    expect(page.locator("#branches ul ul ul button.branch")).to_have_count(1)


def test_what_if_starts_at_exactly_the_runs_own_step(playground: PlaygroundPage) -> None:
    """Values beyond the sliders' usual range (top-k 150, min-p 0.6) are kept exactly, and
    penalize_prompt goes with the inspect: the first what-if answer is the run's own step."""
    page = playground.page
    penalties = playground.open_group("Penalties")
    penalties.get_by_label("Repetition penalty", exact=True).fill("1.5")
    penalties.get_by_label("Penalize the prompt's tokens too", exact=True).check()
    playground.run(PROMPT, temperature=2, top_k=150, min_p=0.6, seed=5, max_tokens=6, top_n=5)
    tokens = playground.events("token")
    at = 3  # a step where min-p 0.6 keeps several tokens and the penalised prompt matters
    playground.tokens.nth(at).click()
    what_if = page.locator("#what-if")
    expect(what_if).to_have_attribute("data-state", "ready", timeout=20_000)

    first = next(s for s in playground.sent_of("inspect") if "variants" not in s)
    assert first["prefix_tokens"] == ids(tokens[:at])
    params = first["params"]
    assert (params["top_k"], params["min_p"], params["temperature"]) == (150, 0.6, 2)
    assert params["penalize_prompt"] is True and params["repetition_penalty"] == 1.5
    answer = next(f for f in playground.frames if f.get("request_id") == first["request_id"])
    trace = answer["traces"][0]
    shown = len(tokens[at]["alternatives"])
    assert [a["id"] for a in trace["alternatives"][:shown]] == [a["id"] for a in tokens[at]["alternatives"]]
    assert [a["prob"] for a in trace["alternatives"][:shown]] == [a["prob"] for a in tokens[at]["alternatives"]]
    assert sum(1 for a in tokens[at]["alternatives"] if a["prob"] > 0) > 1  # the test means something
    rows = what_if.locator("tbody tr")
    for i, alt in enumerate(trace["alternatives"]):
        assert float(rows.nth(i).get_attribute("data-prob")) == alt["prob"]

    # The dials show the run's values; the sliders' range grew to hold them.
    for label, value in (("Top-k", "150"), ("Min-p", "0.6"), ("Temperature", "2")):
        expect(page.get_by_label(f"What-if {label}, exact value", exact=True)).to_have_value(value)
        expect(page.get_by_label(f"What-if {label}", exact=True)).to_have_value(value)

    # Typing an exact value in the box is what is sent.
    page.get_by_label("What-if Top-k, exact value", exact=True).fill("137")
    expect(what_if.locator(".stages-kept")).to_contain_text("top_k: 137", timeout=10_000)
    assert [s["params"]["top_k"] for s in playground.sent_of("inspect") if "variants" not in s][-1] == 137
    expect(page.get_by_label("What-if Top-k", exact=True)).to_have_value("137")


def test_what_if_reaches_the_penalties_too(playground: PlaygroundPage) -> None:
    """A repetition penalty in the what-if lowers the tokens the history holds (here the prompt's)."""
    page = playground.page
    playground.open_group("Penalties").get_by_label("Penalize the prompt's tokens too", exact=True).check()
    playground.run("one two one two one two one", temperature=1, top_p=1, seed=2, max_tokens=2, top_n=5)
    prompt_ids = {t["id"] for t in playground.event("started")["prompt_tokens"]}
    playground.tokens.nth(0).click()
    what_if = page.locator("#what-if")
    expect(what_if).to_have_attribute("data-state", "ready", timeout=20_000)
    before = {
        int(row.get_attribute("data-id")): float(row.get_attribute("data-prob")) for row in what_if.locator("tbody tr").all()
    }
    page.get_by_label("What-if Repetition penalty", exact=True).fill("2")
    expect(what_if.locator(".stages-kept")).to_contain_text("repetition_penalty", timeout=10_000)
    page.wait_for_function("() => document.querySelector('#what-if').dataset.state === 'ready'")
    sent = [s for s in playground.sent_of("inspect") if "variants" not in s][-1]
    assert sent["params"]["repetition_penalty"] == 2 and sent["params"]["penalize_prompt"] is True
    answer = next(f for f in playground.frames if f.get("request_id") == sent["request_id"])
    after = {a["id"]: a["prob"] for a in answer["traces"][0]["alternatives"]}
    penalised = [i for i in prompt_ids if before.get(i, 0) > 0.01]
    assert penalised, f"expected a prompt token among the likely alternatives: {before}"
    assert all(after[i] < before[i] for i in penalised)
