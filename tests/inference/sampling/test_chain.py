"""The chain as a whole: ordering, the final pick, seeding, traces, inputs left alone."""

from __future__ import annotations

import numpy as np
import pytest

from inference.sampling import DEFAULT_ORDER, SamplerChain, SamplingParams

from .helpers import ScriptedRng, dist, kept, logits_for

# -- ordering rules ------------------------------------------------------------------------------


def test_default_order_is_the_issue_pipeline():
    assert DEFAULT_ORDER == (
        "grammar",
        "logit_bias",
        "repetition_penalty",
        "frequency_penalty",
        "presence_penalty",
        "dry",
        "no_repeat_ngram",
        "top_n_sigma",
        "temperature",
        "dynamic_temperature",
        "top_k",
        "top_p",
        "min_p",
        "typical_p",
        "epsilon_cutoff",
        "eta_cutoff",
        "xtc",
        "mirostat",
    )


def test_disabled_stages_are_not_added_and_order_is_data():
    assert SamplerChain(SamplingParams()).stage_names == ()
    params = SamplingParams(temperature=0.7, top_k=40, top_p=0.9)
    assert SamplerChain(params).stage_names == ("temperature", "top_k", "top_p")
    last = tuple(n for n in DEFAULT_ORDER if n != "temperature") + ("temperature",)
    params = SamplingParams(temperature=0.7, top_k=40, top_p=0.9, sampler_order=last)
    assert SamplerChain(params).stage_names == ("top_k", "top_p", "temperature")


def test_temperature_before_or_after_top_p():
    # logits 2, 1, 0. Temperature 2 first: p = 0.507, 0.307, 0.186 -> top_p 0.6 needs two.
    # top_p first (T = 1): p = 0.665, 0.245, 0.090 -> 0.665 >= 0.6: one.
    last = tuple(n for n in DEFAULT_ORDER if n != "temperature") + ("temperature",)
    assert kept([2.0, 1.0, 0.0], temperature=2.0, top_p=0.6) == [0, 1]
    assert kept([2.0, 1.0, 0.0], temperature=2.0, top_p=0.6, sampler_order=last) == [0]


def test_logit_bias_before_or_after_repetition_penalty():
    # token 0: logit 2, seen, bias -1, penalty 2. Bias first: (2 - 1) / 2 = 0.5.
    # Penalty first: 2 / 2 - 1 = 0. Token 1 stays at 0.
    swapped = ("grammar", "repetition_penalty", "logit_bias") + DEFAULT_ORDER[3:]
    p = dist([2.0, 0.0], [0], logit_bias={0: -1.0}, repetition_penalty=2.0)
    q = dist([2.0, 0.0], [0], logit_bias={0: -1.0}, repetition_penalty=2.0, sampler_order=swapped)
    assert np.log(p[0] / p[1]) == pytest.approx(0.5)
    assert np.log(q[0] / q[1]) == pytest.approx(0.0, abs=1e-12)


def test_probability_stages_see_the_renormalized_distribution():
    # p = 0.4, 0.3, 0.2, 0.1. top_k 2 leaves 0.4 : 0.3 = 0.571, 0.429: epsilon 0.35 after it keeps
    # both (0.429 >= 0.35, although the raw 0.3 < 0.35); epsilon 0.45 keeps token 0 only.
    logits = logits_for([0.4, 0.3, 0.2, 0.1])
    assert kept(logits, top_k=2, epsilon_cutoff=0.35) == [0, 1]
    assert kept(logits, top_k=2, epsilon_cutoff=0.45) == [0]
    assert kept(logits, epsilon_cutoff=0.35) == [0]


def test_every_removing_stage_keeps_at_least_one_token():
    logits = logits_for([0.5, 0.3, 0.2])
    assert kept(logits, epsilon_cutoff=0.9) == [0]
    assert kept(logits, eta_cutoff=0.99) == [0]
    assert kept(logits, xtc_probability=1.0, xtc_threshold=0.0, seed=1) == [2]  # the least likely
    assert kept(logits, mirostat=2, mirostat_tau=0.01) == [0]


# -- the final pick ------------------------------------------------------------------------------


@pytest.mark.parametrize("u, token", [(0.0, 1), (0.55, 1), (0.65, 2), (0.89, 2), (0.95, 0)])
def test_inverse_cdf_over_probability_descending(u, token):
    # p = 0.1, 0.6, 0.3 sorted: id 1 (cum 0.6), id 2 (0.9), id 0 (1.0); first cum > u.
    chain = SamplerChain(SamplingParams())
    assert chain.step(logits_for([0.1, 0.6, 0.3]), [], ScriptedRng(u)).token == token


@pytest.mark.parametrize("u, token", [(0.5, 0), (0.95, 1)])
def test_the_docs_worked_example(u, token):
    # T = 2 on logits 8 and 3: p_A = 0.924; u = 0.95 is only passed at B.
    chain = SamplerChain(SamplingParams(temperature=2.0))
    assert chain.step(np.array([8.0, 3.0]), [], ScriptedRng(u)).token == token


def test_pick_ties_go_to_the_lower_id_first():
    chain = SamplerChain(SamplingParams())
    assert chain.step(np.zeros(2), [], ScriptedRng(0.49)).token == 0
    assert chain.step(np.zeros(2), [], ScriptedRng(0.51)).token == 1


def test_exactly_one_draw_per_token_even_with_xtc_and_mirostat():
    params = SamplingParams(xtc_probability=0.5, mirostat=2, temperature=0.9, seed=3)
    chain = SamplerChain(params)
    rng = np.random.default_rng(5)
    twin = np.random.default_rng(5)
    for _ in range(10):
        step = chain.step(np.linspace(0, 3, 50), [], rng)
        assert step.draw == twin.random()


def test_same_seed_same_draws_whatever_the_params():
    logits = np.linspace(-2, 2, 30)
    draws = []
    for params in (
        SamplingParams(),
        SamplingParams(temperature=1.7, top_k=5, top_p=0.5),
        SamplingParams(min_p=0.3, repetition_penalty=1.5, typical_p=0.7),
    ):
        chain, rng, history = SamplerChain(params), np.random.default_rng(42), []
        run = []
        for _ in range(15):
            step = chain.step(logits, history, rng)
            history.append(step.token)
            run.append(step.draw)
        draws.append(run)
    assert draws[0] == draws[1] == draws[2]
    assert draws[0][:2] == list(np.random.default_rng(42).random(2))


def test_chi_square_frequencies_match_the_distribution():
    """20,000 draws with a fixed seed against ``distribution``. With 5 tokens left there are
    4 degrees of freedom; the 0.1 % critical value of chi-square(4) is 18.467."""
    logits = np.array([2.0, 1.5, 1.0, 0.2, -0.5, -3.0])
    chain = SamplerChain(SamplingParams(temperature=0.8, top_k=5))
    p = chain.distribution(logits, [])
    assert p[5] == 0.0
    rng = np.random.default_rng(20240601)
    n = 20000
    counts = np.bincount([chain.sample(logits, [], rng) for _ in range(n)], minlength=6)
    assert counts[5] == 0
    expected = n * p[:5]
    chi2 = float(((counts[:5] - expected) ** 2 / expected).sum())
    assert chi2 < 18.467
    # the test can fail: the raw distribution (before temperature and top-k) is far off
    raw = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert float(((counts - n * raw) ** 2 / (n * raw)).sum()) > 18.467


# -- the trace -----------------------------------------------------------------------------------


def test_trace_alternatives_stages_and_entropy():
    logits = logits_for([0.05, 0.5, 0.3, 0.15])
    chain = SamplerChain(SamplingParams(top_k=3, top_p=0.7))
    step = chain.step(logits, [], ScriptedRng(0.9), top_n=3)
    # top-k 3 drops id 0 (0.05); top-p 0.7 on 0.5/0.95, 0.3/0.95 = 0.526 + 0.316 = 0.842: ids 1, 2.
    assert [(s.name, s.kept) for s in step.stages] == [("top_k", 3), ("top_p", 2)]
    assert [a.id for a in step.alternatives] == [1, 2, 3]
    assert [a.removed_by for a in step.alternatives] == [None, None, "top_p"]
    assert step.alternatives[0].raw_prob == pytest.approx(0.5)
    assert step.alternatives[0].prob == pytest.approx(0.5 / 0.8)
    assert step.alternatives[2].prob == 0.0
    assert step.token == 2 and step.draw == 0.9  # 0.9 > 0.625: second in the order
    assert step.chosen.id == 2 and step.prob == pytest.approx(0.3 / 0.8)
    assert step.raw_prob == pytest.approx(0.3)
    h_raw = -sum(p * np.log(p) for p in (0.05, 0.5, 0.3, 0.15))
    h_final = -sum(p * np.log(p) for p in (0.625, 0.375))
    assert step.entropy_before == pytest.approx(h_raw)
    assert step.entropy_after == pytest.approx(h_final)
    assert step.describe(0) == type(step.chosen)(0, pytest.approx(0.05), 0.0, "top_k")
    data = step.to_dict()
    assert data["entropy"] == {"before": step.entropy_before, "after": step.entropy_after}
    assert data["stages"] == [{"name": "top_k", "kept": 3}, {"name": "top_p", "kept": 2}]
    assert data["alternatives"][2] == {"id": 3, "raw_prob": pytest.approx(0.15), "prob": 0.0, "removed_by": "top_p"}
    assert data["chosen"]["id"] == 2 and data["draw"] == 0.9


def test_chosen_is_described_even_outside_the_top_n():
    chain = SamplerChain(SamplingParams())
    step = chain.step(logits_for([0.5, 0.3, 0.2]), [], ScriptedRng(0.95), top_n=1)
    assert [a.id for a in step.alternatives] == [0]
    assert step.chosen.id == 2 and step.chosen.raw_prob == pytest.approx(0.2)


def test_alternatives_ties_by_lower_id():
    step = SamplerChain(SamplingParams()).trace(np.array([0.0, 1.0, 1.0, 1.0]), [], top_n=2)
    assert [a.id for a in step.alternatives] == [1, 2]
    assert step.token is None and step.draw is None and step.chosen is None


def test_trace_and_distribution_are_pure():
    chain = SamplerChain(SamplingParams(mirostat=2, xtc_probability=0.5, seed=9))
    logits = np.linspace(0, 4, 40)
    first = chain.distribution(logits, [])
    for _ in range(3):
        chain.trace(logits, [])
    assert np.array_equal(chain.distribution(logits, []), first)
    chain.step(logits, [], np.random.default_rng(0))
    assert chain.stages[-1].mu != 10.0  # the step, and only the step, moved mu


# -- inputs --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inputs_are_never_modified(dtype):
    logits = np.array([3.0, 1.0, 2.0, -1.0, 0.5], dtype=dtype)
    history = [0, 2, 2, 1]
    before, history_before = logits.copy(), list(history)
    params = SamplingParams(
        repetition_penalty=1.3,
        frequency_penalty=0.5,
        presence_penalty=0.2,
        logit_bias={1: 3.0},
        dry_multiplier=1.0,
        temperature=0.7,
        top_k=4,
    )
    chain = SamplerChain(params)
    chain.distribution(logits, history)
    chain.step(logits, history, np.random.default_rng(0))
    assert np.array_equal(logits, before) and logits.dtype == dtype and history == history_before


def test_minus_infinity_logits_are_never_candidates():
    p = dist([0.0, -np.inf, 0.0])
    assert p.tolist() == [0.5, 0.0, 0.5]
    with pytest.raises(ValueError):
        dist([np.nan, 0.0])
    with pytest.raises(ValueError):
        dist([-np.inf, -np.inf])


def test_logit_bias_ids_are_checked_against_the_vocabulary():
    params = SamplingParams(logit_bias={7: 1.0})
    with pytest.raises(ValueError) as err:
        SamplerChain(params).distribution(np.zeros(5), [])
    assert err.value.param == "logit_bias.7"
    with pytest.raises(ValueError):
        params.validate_for_vocab(5)
    params.validate_for_vocab(8)


def test_history_ids_outside_the_vocabulary_are_an_error():
    with pytest.raises(ValueError):
        dist([0.0, 0.0], [5], repetition_penalty=1.2)
