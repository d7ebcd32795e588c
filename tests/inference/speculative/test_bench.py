"""The speculative benchmark runs end to end on the tiny model (its figures mean nothing there)."""

from __future__ import annotations

from inference.bench import speculative as bench_speculative


def test_the_benchmark_reports_every_kind_and_k_and_greedy_agrees(tiny_runtime):
    report = bench_speculative.measure(tiny_runtime, [2, 8], tokens=6, rounds=1, temperature=0.0)["speculative"]
    assert set(report["figures"]) == set(bench_speculative.PROMPTS) == {"code", "summary", "story"}
    for by_setting in report["figures"].values():
        assert set(by_setting) == {"plain", "prompt_lookup k=2", "prompt_lookup k=8"}
        for setting in ("prompt_lookup k=2", "prompt_lookup k=8"):
            figures = by_setting[setting]
            assert figures["same_tokens_as_plain"] is True
            assert 0.0 <= figures["acceptance"]["min"] <= figures["acceptance"]["max"] <= 1.0
            assert 1.0 <= figures["tokens_per_pass"]["median"] <= 9.0
