"""The sampler bench's own arithmetic: the share of mass past the head it reports, and timing the
chain on a built model's logits over its fixed text."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from inference.modelbuild import default_tiny_dir
from inference.sampling.bench import CASES, chain_cost_ms, made_up_rows, main, mass_past_head, model_logits


def test_the_mass_past_the_head_is_the_share_of_the_tokens_below_a_64th_of_the_top():
    # e = 1 for the top, 1/64 exactly at the head's edge (kept), 1/100 three times (past the head)
    row = np.array([0.0, math.log(2.0**-6), *[math.log(0.01)] * 3], dtype=np.float64)
    expected = 0.03 / (1.0 + 2.0**-6 + 0.03)
    assert mass_past_head([row]) == pytest.approx(expected, rel=1e-12)
    assert mass_past_head([row, np.zeros(5)]) == pytest.approx(expected / 2, rel=1e-12)  # flat: all in the head


def test_the_made_up_rows_put_a_share_past_the_head_a_model_rarely_does():
    assert 0.25 < mass_past_head(made_up_rows(262_144)) < 0.5  # docs/sampling.md quotes it


def test_the_chain_is_timed_on_a_models_own_logits(tiny_runtime):
    rows = model_logits(default_tiny_dir(), positions=12)
    assert len(rows) == 12
    assert all(row.dtype == np.float32 and row.shape == (tiny_runtime.shape.vocab_size,) for row in rows)
    assert chain_cost_ms(CASES["defaults"], steps=20, logits=rows) > 0.0


def test_the_bench_prints_each_cases_median_over_rounds_within_its_range(capsys, tiny_runtime):
    main(["--rounds", "2", "--steps", "3", "--grammar-rounds", "1", "--cpu-clock", "--model-dir", str(default_tiny_dir())])
    report = json.loads(capsys.readouterr().out)
    assert report["rounds"] == 2 and report["clock"] == "thread CPU time"
    for vocab in ("49152", "262144"):
        for case, ms in report["cost"][vocab].items():
            low, high = report["cost_range"][vocab][case]
            assert 0 < low <= ms <= high
    tiny = report["on_model_logits"][default_tiny_dir().name]
    assert tiny["vocab_size"] == tiny_runtime.shape.vocab_size and 0.0 <= tiny["mass_past_head"] <= 1.0
    for case in ("defaults", "greedy", "temperature_0.7_top_p_0.9", "every_stage"):
        low, high = tiny["range"][case]
        assert 0 < low <= tiny[case] <= high
    assert len(report["load_average"]["before"]) == 3
