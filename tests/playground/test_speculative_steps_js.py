"""Speculative decoding as the page tells it (static/shared/js/speculative-steps.js, run in Node):
verification events written by hand in docs/websocket-api.md's shape — sampled and greedy, a
rejection with drafts left unchecked, a bonus — into steps and sentences with their own numbers;
the run's totals; the comparison with the same run without speculation. The settings' facts and
field names (static/playground/js/speculative-panel.js) and the address codec (address.js)."""

from __future__ import annotations

from tests.js import module_url, run_js

STEPS = f"""
const s = await import("{module_url("shared/js/speculative-steps.js")}");
const steps = INPUT.events.map((e) => s.verificationStep(e));
console.log(JSON.stringify({{
  steps,
  checks: steps.map((step) => step.checks.map((c) => s.checkWords(c, c.verdict === "rejected" ? step.corrected : null))),
  words: steps.map((step) => s.stepWords(step)),
  summaries: INPUT.totals.map((t) => s.summaryWords(s.speculativeSummary(t))),
  rates: INPUT.totals.map((t) => s.speculativeSummary(t).rate),
  added: s.stepTotals(steps),
  issue: (() => {{
    const issue = INPUT.issue.map((e) => s.verificationStep(e));
    return {{ words: issue.map((step) => s.stepWords(step)), added: s.stepTotals(issue) }};
  }})(),
  comparisons: INPUT.pairs.map(([a, b, params]) => {{
    const result = s.compareWithout(a, b, params);
    return {{ result, words: s.comparisonWords(result) }};
  }}),
}}));
"""

# Sampled, a draft model's q: the first kept (u < p/q), the second rejected, the third never checked.
SAMPLED = {
    "type": "verification",
    "request_id": "r-1",
    "sample": 0,
    "index": 12,
    "drafted": [
        {"id": 314, "token": " return", "accepted": True, "p": 0.41, "q": 0.5, "draw": 0.3},
        {"id": 2851, "token": " x", "accepted": False, "p": 0.2, "q": 0.8, "draw": 0.66},
        {"id": 28, "token": ";", "accepted": None, "p": None, "q": None, "draw": None},
    ],
    "accepted": 1,
    "corrected": {"id": 1134, "token": " self"},
    "bonus": None,
}
# Greedy prompt lookup, every draft the chain's pick: all kept, and a bonus token.
GREEDY_ALL = {
    "type": "verification",
    "request_id": "r-1",
    "sample": 0,
    "index": 3,
    "drafted": [
        {"id": 7, "token": " (", "accepted": True, "p": 1.0, "q": 1.0, "draw": None},
        {"id": 8, "token": "n", "accepted": True, "p": 1.0, "q": 1.0, "draw": None},
    ],
    "accepted": 2,
    "corrected": None,
    "bonus": {"id": 9, "token": "):\n"},
}
# Greedy, the first draft is not the chain's pick: p = 0, rejected; the pick takes its place.
GREEDY_MISS = GREEDY_ALL | {
    "index": 20,
    "drafted": [{"id": 5, "token": " a", "accepted": False, "p": 0.0, "q": 1.0, "draw": None}],
    "accepted": 0,
    "corrected": {"id": 6, "token": " b"},
    "bonus": None,
}

TOTALS = [
    {"drafted": 57, "checked": 57, "accepted": 41, "verifications": 20, "switched_off_at": None, "reason": None},
    {"drafted": 10, "checked": 10, "accepted": 1, "verifications": 6, "switched_off_at": 14},  # saved before totals said why
    {"drafted": 0, "checked": 0, "accepted": 0, "verifications": 0, "switched_off_at": None, "reason": None},
    {  # the switch-off rule as it goes: 6 passes of 10 drafts made 7 tokens for 12.4 steps
        "drafted": 10,
        "checked": 10,
        "accepted": 1,
        "verifications": 6,
        "switched_off_at": 14,
        "reason": {"rule": "low_acceptance", "tokens": 7, "steps": 12.4},
    },
    {  # before the first draft: 4 drafts all accepted would make 5 tokens for 5.65 steps
        "drafted": 0,
        "checked": 0,
        "accepted": 0,
        "verifications": 0,
        "switched_off_at": 0,
        "reason": {"rule": "cannot_pay", "tokens": 5, "steps": 5.65},
    },
    {
        "drafted": 0,
        "checked": 0,
        "accepted": 0,
        "verifications": 0,
        "switched_off_at": 0,
        "reason": {"rule": "cannot_pay", "tokens": 2, "steps": 2.6},
    },
    # issue 30's run: drafts of 1, 4, 4, 4, 4, each step's first rejected (the rest never checked)
    {"drafted": 17, "checked": 5, "accepted": 0, "verifications": 5, "switched_off_at": None, "reason": None},
]


def missed_step(index: int, drafts: int) -> dict:
    """A greedy step whose first draft is rejected: its other drafts are never checked."""
    drafted = [{"id": 50 + i, "token": f" w{i}", "accepted": None, "p": None, "q": None, "draw": None} for i in range(drafts)]
    drafted[0] = {"id": 50, "token": " w0", "accepted": False, "p": 0.0, "q": 1.0, "draw": None}
    return GREEDY_MISS | {"index": index, "drafted": drafted}


ISSUE_STEPS = [missed_step(1, 1), missed_step(2, 4), missed_step(3, 4), missed_step(4, 4), missed_step(5, 4)]


def run(idx: list[int], rate: float | None) -> dict:
    return {"tokens": [{"id": i} for i in idx], "done": {"timing": {"decode_tokens_per_s": rate}}}


PAIRS = [
    [run([1, 2, 3], 30.0), run([1, 2, 3], 20.0), {"temperature": 0}],
    [run([1, 2, 4], 30.0), run([1, 2, 3, 5], 24.0), {"temperature": 0.8}],
    [run([1], 30.0), run([1], None), {"temperature": 0}],
]


def answers() -> dict:
    return run_js(STEPS, {"events": [SAMPLED, GREEDY_ALL, GREEDY_MISS], "totals": TOTALS, "pairs": PAIRS, "issue": ISSUE_STEPS})


def test_a_sampled_step_accepted_rejected_and_unchecked():
    out = answers()
    step = out["steps"][0]
    assert [c["verdict"] for c in step["checks"]] == ["accepted", "rejected", "unjudged"]
    assert step["checks"][0]["chance"] == 0.82  # min(1, 0.41 / 0.5)
    assert step["checks"][1]["chance"] == 0.25  # 0.2 / 0.8
    assert step["checks"][2]["chance"] is None
    assert (step["drafted"], step["checked"], step["accepted"], step["tokens"]) == (3, 2, 1, 2)
    first, second, third = out["checks"][0]
    assert first == "p = 0.41, q = 0.50 → accepted with probability min(1, p/q) = 0.82 (u = 0.30 < 0.82)"
    assert second == (
        "p = 0.20, q = 0.80 → rejected: accepted only with probability min(1, p/q) = 0.25 (u = 0.66 ≥ 0.25); "
        '" self" drawn instead from the normalised max(0, p − q)'
    )
    assert third.startswith("not checked")
    assert out["words"][0] == (
        'At token 13: 3 drafted (2 checked), 1 accepted, then " self" in place of the rejected draft: '
        "2 tokens from one pass of the model."
    )


def test_greedy_steps_with_a_bonus_and_a_miss():
    out = answers()
    kept, missed = out["steps"][1], out["steps"][2]
    assert (kept["accepted"], kept["tokens"], kept["bonus"]) == (2, 3, {"id": 9, "token": "):\n"})
    assert out["checks"][1][0] == (
        "p = 1.00, q = 1.00 → accepted with probability min(1, p/q) = 1.00 (greedy: it is the model's own pick)"
    )
    assert out["words"][1] == (
        'At token 4: 2 drafted, all 2 accepted, and the same pass gave "):\\n" as a bonus: 3 tokens from one pass of the model.'
    )
    assert (missed["accepted"], missed["tokens"]) == (0, 1)
    assert out["checks"][2][0] == (
        "p = 0.00, q = 1.00 → rejected: accepted only with probability min(1, p/q) = 0.00 "
        "(greedy: the model's own pick is another token); the model's pick \" b\" takes its place"
    )


def test_the_runs_totals_in_words():
    out = answers()
    assert out["rates"][0] == 41 / 57 and out["rates"][2] is None
    assert out["summaries"][0] == "57 drafted, 41 accepted in 20 verification passes: acceptance rate 71.9%."
    assert out["summaries"][1] == (
        "10 drafted, 1 accepted in 6 verification passes: acceptance rate 10.0%. Speculation switched itself off "
        "from token 15: too few drafts were accepted for it to pay."
    )
    assert out["summaries"][2] == "0 drafted, 0 accepted in 0 verification passes: nothing was drafted."
    assert out["summaries"][3] == (
        "10 drafted, 1 accepted in 6 verification passes: acceptance rate 10.0%. Speculation switched itself off "
        "from token 15: its passes had made 7 tokens for the cost of 12.40 plain steps, too few drafts accepted for it to pay."
    )
    assert out["summaries"][4] == (
        "Speculation never started: even if all 4 drafts were accepted, a pass would make 5 tokens for the cost of "
        "5.65 plain steps on this machine, so every token was decoded plainly."
    )
    assert out["summaries"][5].startswith(
        "Speculation never started: even if the 1 draft was accepted, a pass would make 2 tokens"
    )


def test_the_summary_counts_as_the_steps_do():
    """One definition: the steps' drafted / checked / accepted added up are the totals, and the summary
    words them as a step does (issue 30: "5 drafted, 0 accepted" above steps of "4 drafted (1 checked)")."""
    out = answers()
    assert out["added"] == {"drafted": 6, "checked": 5, "accepted": 3, "verifications": 3}
    issue = out["issue"]
    assert issue["words"][1].startswith("At token 3: 4 drafted (1 checked), 0 accepted, then")
    assert issue["added"] == {k: TOTALS[-1][k] for k in ("drafted", "checked", "accepted", "verifications")}
    assert out["rates"][-1] == 0
    assert out["summaries"][-1] == (
        "17 drafted (5 checked), 0 accepted in 5 verification passes: acceptance rate 0.0% of the checked drafts."
    )


def test_compared_without_speculation():
    greedy, sampled, unknown = answers()["comparisons"]
    assert greedy["result"] == {
        "speculativeRate": 30.0,
        "plainRate": 20.0,
        "speedup": 1.5,
        "identical": True,
        "differsAt": None,
        "greedy": True,
    }
    assert greedy["words"] == (
        "With speculation 30.0 tokens/s, without 20.0 tokens/s: 1.50× the speed. The outputs are identical, token "
        "for token. Greedy: speculation must not change a single token, and it did not."
    )
    assert sampled["result"]["identical"] is False and sampled["result"]["differsAt"] == 2
    assert "differ from token 3 on" in sampled["words"] and "distributed alike, not equal" in sampled["words"]
    assert unknown["result"]["speedup"] is None and "without – ." not in unknown["words"]


SETTINGS = f"""
const panel = await import("{module_url("playground/js/speculative-panel.js")}");
const address = await import("{module_url("shared/js/address.js")}");
console.log(JSON.stringify({{
  facts: INPUT.props.map((p) => panel.speculativeFacts(p)),
  fields: INPUT.params.map((p) => panel.speculativeFieldFor(p)),
  texts: INPUT.values.map((v) => address.speculativeText(v)),
  back: INPUT.texts.map((t) => address.speculativeValue(t)),
}}));
"""


def test_settings_facts_fields_and_address_text():
    served = {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "draft": {"enum": ["prompt_lookup", "fast", "tiny"], "default": "prompt_lookup"},
                    "k": {"type": "integer", "minimum": 1, "maximum": 6, "default": 3},
                },
            },
            {"type": "null"},
        ]
    }
    out = run_js(
        SETTINGS,
        {
            "props": [None, served],
            "params": [
                "params.speculative.k",
                "params.speculative.draft",
                "params.speculative",
                "params.top_k",
                "params.speculative.switch_off",
            ],
            "values": [
                None,
                {"draft": "prompt_lookup", "k": 4},
                {"draft": "fast", "k": 4, "switch_off": False},
                {"draft": "fast", "k": 4, "switch_off": True},
            ],
            "texts": ["", '{"draft":"fast","k":2}', "{not json", "[1]", '{"draft":"fast","k":4,"switch_off":false}'],
        },
    )
    assert out["facts"][0] == {
        "drafts": ["prompt_lookup", "fast"],
        "draftDefault": "prompt_lookup",
        "kMin": 1,
        "kMax": 8,
        "kDefault": 4,
    }
    assert out["facts"][1] == {
        "drafts": ["prompt_lookup", "fast", "tiny"],
        "draftDefault": "prompt_lookup",
        "kMin": 1,
        "kMax": 6,
        "kDefault": 3,
    }
    assert out["fields"] == ["speculative-k", "speculative-draft", "speculative-on", None, "speculative-keep-drafting"]
    assert out["texts"] == [
        "",
        '{"draft":"prompt_lookup","k":4}',
        '{"draft":"fast","k":4,"switch_off":false}',  # kept drafting: said; the default is left out
        '{"draft":"fast","k":4}',
    ]
    assert out["back"] == [None, {"draft": "fast", "k": 2}, None, None, {"draft": "fast", "k": 4, "switch_off": False}]
