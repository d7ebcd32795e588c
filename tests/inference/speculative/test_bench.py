"""The speculative benchmark runs end to end on the tiny model (its figures mean nothing there)."""

from __future__ import annotations

from inference.bench import speculative as bench_speculative

SETTINGS = ("prompt_lookup k=2", "prompt_lookup k=8", "prompt_lookup k=2 kept drafting", "prompt_lookup k=8 kept drafting")


def test_the_benchmark_reports_every_kind_and_k_and_greedy_agrees(tiny_runtime):
    report = bench_speculative.measure(
        tiny_runtime, [2, 8], tokens=6, rounds=1, temperature=0.0, keep_drafting=("prompt_lookup",)
    )["speculative"]
    assert set(report["figures"]) == set(bench_speculative.PROMPTS) == {"code", "summary", "story"}
    assert report["kept_drafting"] == ["prompt_lookup"]
    for by_setting in report["figures"].values():
        assert set(by_setting) == {"plain", *SETTINGS}
        for setting in SETTINGS:
            figures = by_setting[setting]
            assert figures["same_tokens_as_plain"] is True
            assert 0.0 <= figures["acceptance"]["min"] <= figures["acceptance"]["max"] <= 1.0
            assert 1.0 <= figures["tokens_per_pass"]["median"] <= 9.0
            assert set(figures["switched_off"]) <= {"cannot_pay", "low_acceptance"}
            if "draft_token_cost" in figures:  # some tokens were drafted: their cost was timed
                assert figures["draft_token_cost"]["min"] >= 0.0
        for setting in SETTINGS[2:]:
            assert by_setting[setting]["switched_off"] == {}  # kept drafting: never switched off
