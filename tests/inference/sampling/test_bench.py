"""The sampler bench's own arithmetic: the share of mass past the head it reports, and timing the
chain on a built model's logits over its fixed text."""

from __future__ import annotations

import math

import numpy as np
import pytest

from inference.modelbuild import default_tiny_dir
from inference.sampling.bench import CASES, chain_cost_ms, made_up_rows, mass_past_head, model_logits


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
