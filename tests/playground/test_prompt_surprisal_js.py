"""The page's prompt-surprisal record and tint switch (static/shared/js/prompt-surprisal-record.js,
tint-mode.js), run in Node against what the server sends for the tiny model: a ``score`` answer
becomes the same record a run's ``prompt_surprisal`` pages make, and the entropy tint's scale."""

from __future__ import annotations

import pytest

from inference.decoding.generation import GenerationRequest, run
from inference.decoding.loop_params import LoopParams
from playground.wire import events
from playground.wire.jobs import Score
from playground.worker import prompt_scores
from tests.js import module_url, run_js

RECORD = f"""
const {{ SurprisalPages, recordFromScores, promptTokenEvents, summaryText }} = await import("{module_url("shared/js/prompt-surprisal-record.js")}");
const pages = new SurprisalPages();
for (const page of [...INPUT.pages].reverse()) pages.add(page);  // any order
const partial = new SurprisalPages();
partial.add(INPUT.pages[0]);
const fromRun = pages.record;
console.log(JSON.stringify({{
  fromRun, partial: partial.record, fromScores: recordFromScores(INPUT.scores),
  events: promptTokenEvents(fromRun), summary: summaryText(fromRun),
}}));
"""


@pytest.fixture(scope="module")
def served(tiny_runtime):
    prompt = "the quick brown fox jumps over the lazy dog " * 30  # over one page of events
    request = GenerationRequest(prompt, loop=LoopParams(max_tokens=1), top_n=3, prompt_scores=True)
    started = next(iter(run(tiny_runtime, request)))
    pages = events.prompt_surprisal_events("r", started.prompt_surprisal, tiny_runtime.codec)
    scores = prompt_scores.answer(tiny_runtime, Score("s", prompt, "completion", None, 3, None), lambda: False)
    assert len(pages) > 1
    return pages, scores, run_js(RECORD, {"pages": pages, "scores": scores})


def test_the_pages_make_the_runs_record_once_all_are_in(served):
    pages, _, out = served
    assert out["partial"] is None
    record = out["fromRun"]
    assert record["tokens"] == [t for page in pages for t in page["tokens"]]
    assert (record["count"], record["perplexity"], record["total_bits"]) == (
        pages[0]["count"],
        pages[0]["perplexity"],
        pages[0]["total_bits"],
    )


def test_a_score_answer_makes_the_same_record(served):
    _, _, out = served
    run_record, scored = out["fromRun"], out["fromScores"]
    assert scored["count"] == run_record["count"]
    assert scored["perplexity"] == pytest.approx(run_record["perplexity"], rel=1e-4)
    assert scored["total_bits"] == pytest.approx(run_record["total_bits"], rel=1e-4)
    for a, b in zip(scored["tokens"], run_record["tokens"]):
        assert a["id"] == b["id"] and [x["id"] for x in a["alternatives"]] == [x["id"] for x in b["alternatives"]]
        assert (a["prob"] is None) == (b["prob"] is None)
        if a["prob"] is not None:
            assert a["prob"] == pytest.approx(b["prob"], abs=1e-5)


def test_each_prompt_token_reads_as_a_token_event(served):
    _, _, out = served
    first, second = out["events"][:2]
    assert first["prob"] is None and first["entropy"] is None and first["prompt"] is True and first["index"] == 0
    assert second["raw_prob"] == second["prob"] and second["entropy"]["before"] == second["entropy"]["after"]
    assert all(a["raw_prob"] == a["prob"] and a["removed_by"] is None for a in second["alternatives"])
    predicted = out["fromRun"]["count"] - 1
    assert f"Perplexity {out['fromRun']['perplexity']:.2f}" in out["summary"] and f"over {predicted} predicted" in out["summary"]


TINT = f"""
const {{ entropyColors, tokenColors, ENTROPY_SCALE_NATS }} = await import("{module_url("shared/js/tint-mode.js")}");
const {{ probColors }} = await import("{module_url("shared/js/colors.js")}");
console.log(JSON.stringify({{
  sure: [entropyColors(0), probColors(1)],
  flat: [entropyColors(ENTROPY_SCALE_NATS), entropyColors(40), probColors(0)],
  middle: [entropyColors(ENTROPY_SCALE_NATS / 2), probColors(0.5)],
  byProb: tokenColors({{ prob: "0.25", entropy: "1" }}, "probability"),
  byEntropy: tokenColors({{ prob: "0.25", entropy: "1" }}, "entropy"),
  expected: [probColors(0.25), entropyColors(1)],
  none: tokenColors({{ prob: "0.5" }}, "entropy"),
}}));
"""


def test_the_entropy_tint_runs_from_sure_to_flat_on_the_probability_scale():
    out = run_js(TINT)
    assert out["sure"][0] == out["sure"][1]  # 0 nats: the brightest, as probability 1
    assert out["flat"][0] == out["flat"][1] == out["flat"][2]  # the scale's end and beyond: the darkest
    assert out["middle"][0] == out["middle"][1]
    assert [out["byProb"], out["byEntropy"]] == out["expected"]
    assert out["none"] is None  # a token without an entropy (a prompt's first) is left untinted
