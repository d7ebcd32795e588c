"""``stable_argsort`` is numpy's stable argsort, value for value, whatever ties the values hold."""

from __future__ import annotations

import numpy as np
import pytest

from inference.sampling.order import FAST_FROM, stable_argsort


def cases(rng: np.random.Generator):
    n = 3 * FAST_FROM + 17
    yield rng.normal(0, 2, n)  # no ties
    yield np.round(rng.normal(0, 2, n), 1)  # a few hundred values, each many times
    many = rng.normal(0, 2, n)
    many[rng.choice(n, n // 3, replace=False)] = -1.25  # a third of the vocabulary shares one logit
    yield many
    removed = rng.normal(0, 2, n)
    removed[rng.choice(n, n // 2, replace=False)] = -np.inf  # half removed by a stage
    yield removed
    zeros = rng.normal(0, 1, n)
    zeros[::7] = 0.0
    zeros[3::7] = -0.0  # equal to 0.0, as a comparison sorts them
    yield zeros
    with_nan = rng.normal(0, 1, n)
    with_nan[::11] = np.nan
    yield with_nan
    yield np.abs(rng.normal(0, 1, 100)).astype(np.float32)  # small: the merge sort itself
    yield np.full(n, 2.5, dtype=np.float32)  # every value equal


@pytest.mark.parametrize("seed", range(4))
def test_it_is_numpys_stable_argsort(seed):
    for values in cases(np.random.default_rng(seed)):
        assert np.array_equal(stable_argsort(values), np.argsort(values, kind="stable"))
