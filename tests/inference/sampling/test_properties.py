"""Property tests: any valid parameters, any finite logits (huge and tiny), any history."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference.sampling import DEFAULT_ORDER, SamplerChain, SamplingParams

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
logit_values = st.one_of(
    finite, st.floats(-1e3, 1e3), st.floats(-1e-300, 1e-300), st.sampled_from([1e308, -1e308, 0.0, 3.4e38, -3.4e38])
)


@st.composite
def cases(draw):
    vocab = draw(st.integers(1, 24))
    logits = np.array(draw(st.lists(logit_values, min_size=vocab, max_size=vocab)), dtype=np.float64)
    if draw(st.booleans()):
        with np.errstate(over="ignore"):
            logits = logits.astype(np.float32)
        logits[~np.isfinite(logits)] = 0.0
    history = draw(st.lists(st.integers(0, vocab - 1), max_size=30))
    maybe = lambda strategy, off: draw(st.one_of(st.just(off), strategy))  # noqa: E731
    order = list(DEFAULT_ORDER)
    if draw(st.booleans()):
        order = draw(st.permutations(DEFAULT_ORDER))
    params = SamplingParams(
        temperature=maybe(st.floats(0, 2), 1.0),
        top_k=maybe(st.integers(0, 30), 0),
        top_p=maybe(st.floats(1e-6, 1), 1.0),
        min_p=maybe(st.floats(0, 1), 0.0),
        typical_p=maybe(st.floats(1e-6, 1), 1.0),
        top_n_sigma=maybe(st.floats(0, 5), 0.0),
        repetition_penalty=maybe(st.floats(1e-3, 10), 1.0),
        frequency_penalty=maybe(st.floats(-2, 2), 0.0),
        presence_penalty=maybe(st.floats(-2, 2), 0.0),
        penalty_window=maybe(st.integers(0, 10), 0),
        logit_bias=maybe(st.dictionaries(st.integers(0, vocab - 1), st.floats(-100, 100), max_size=3), {}),
        dry_multiplier=maybe(st.floats(0, 5), 0.0),
        dry_base=maybe(st.floats(1, 4), 1.75),
        dry_allowed_length=maybe(st.integers(1, 4), 2),
        dry_penalty_last_n=maybe(st.integers(-1, 20), -1),
        no_repeat_ngram_size=maybe(st.integers(0, 4), 0),
        epsilon_cutoff=maybe(st.floats(0, 0.999), 0.0),
        eta_cutoff=maybe(st.floats(0, 0.999), 0.0),
        xtc_probability=maybe(st.floats(0, 1), 0.0),
        xtc_threshold=maybe(st.floats(0, 1), 0.1),
        mirostat=maybe(st.just(2), 0),
        mirostat_tau=maybe(st.floats(0.01, 20), 5.0),
        mirostat_eta=maybe(st.floats(0, 1), 0.1),
        dynatemp_range=maybe(st.floats(0, 2), 0.0),
        dynatemp_exponent=maybe(st.floats(0, 5), 1.0),
        sampler_order=tuple(order),
        seed=draw(st.integers(0, 2**63 - 1)),
    )
    return params, logits, history


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(0, 2**32 - 1))
def test_the_distribution_is_always_a_distribution(case, seed):
    params, logits, history = case
    logits_before, history_before = logits.copy(), list(history)
    chain = SamplerChain(params)
    p = chain.distribution(logits, history)
    assert p.dtype == np.float64 and p.shape == logits.shape
    assert not np.isnan(p).any() and (p >= 0).all()
    assert abs(p.sum() - 1.0) < 1e-9
    assert np.count_nonzero(p) >= 1
    trace = chain.trace(logits, history, top_n=3)
    assert all(stage.kept >= 1 for stage in trace.stages)
    assert np.isfinite(trace.entropy_before) and np.isfinite(trace.entropy_after)
    step = chain.step(logits, history, np.random.default_rng(seed))
    assert p[step.token] > 0  # the step draws from the distribution computed just before
    assert step.chosen.removed_by is None
    assert np.array_equal(logits, logits_before) and history == history_before
