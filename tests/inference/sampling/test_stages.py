"""Table tests, one stage at a time, over vocabularies small enough to work out by hand.

Expected numbers come from the definitions (worked in the comments) and from the worked examples
of the seed texts, quoted where they are used, never from running the chain.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from inference.sampling import XTC_STREAM, SamplerChain, SamplingParams

from .helpers import ScriptedRng, dist, kept, logits_for, softmax

# -- temperature: from the seed texts, "consider two tokens with logits 8.0 and 3.0" -------------


@pytest.mark.parametrize(
    "temperature, seed_value, tolerance",
    [
        (1.0, 0.993, 5e-4),  # "= 0.993 (99.3%)"
        (0.5, 0.99995, 5e-6),  # "= 0.99995 (99.995%)"
        (2.0, 0.924, 5e-4),  # "= 0.924 (92.4%)"
    ],
)
def test_temperature_matches_the_seed_numbers(temperature, seed_value, tolerance):
    p = dist([8.0, 3.0], temperature=temperature)
    assert p[0] == pytest.approx(seed_value, abs=tolerance)
    # and exactly the definition: p_A = 1 / (1 + exp(-(8 - 3) / T))
    assert p[0] == pytest.approx(1 / (1 + math.exp(-5 / temperature)), rel=1e-12)
    assert p[1] == pytest.approx(1 - p[0], rel=1e-9)


def test_seed_token_b_at_high_and_low_temperature():
    assert dist([8.0, 3.0])[1] == pytest.approx(0.007, abs=5e-4)  # "0.007 (0.7%)"
    assert dist([8.0, 3.0], temperature=2.0)[1] == pytest.approx(0.076, abs=5e-4)  # "7.6%"


def test_greedy_is_one_hot_on_the_lowest_id_among_tied_maxima():
    chain = SamplerChain(SamplingParams(temperature=0.0))
    assert chain.distribution(np.array([1.0, 3.0, 3.0, 2.0]), []).tolist() == [0, 1, 0, 0]
    rng = ScriptedRng()  # no values: greedy must not draw
    step = chain.step(np.array([1.0, 3.0, 3.0, 2.0]), [], rng)
    assert (step.token, step.draw, step.greedy, rng.calls) == (1, None, True, 0)


def test_greedy_sees_stages_before_temperature_and_skips_the_filters_after():
    # repetition penalty 2 halves token 1's logit 3 -> 1.5, so token 2 (2.9) is the maximum.
    chain = SamplerChain(SamplingParams(temperature=0.0, repetition_penalty=2.0, top_k=1, min_p=0.5))
    assert chain.stage_names == ("repetition_penalty", "temperature")
    assert chain.distribution(np.array([1.0, 3.0, 2.9]), [1]).tolist() == [0, 0, 1]


# -- top-p: the seed texts' "Nucleus size adapts to model confidence" -----------------------------
# (their confident_logits [10.0, 2.0, 1.5, 1.0, 0.5, 0.0, -1.0, -2.0, -3.0, -5.0] and
# uncertain_logits [3.0, 2.8, 2.6, 2.4, 2.2, 2.0, 1.8, 1.6, 1.4, 1.2], nucleus at p = 0.9)


def test_nucleus_of_the_confident_distribution_is_one_token():
    # e^10 / (e^10 + e^2 + e^1.5 + ... ) = 22026.5 / 22044.3 = 0.9992 >= 0.9 on its own.
    confident = [10.0, 2.0, 1.5, 1.0, 0.5, 0.0, -1.0, -2.0, -3.0, -5.0]
    assert kept(confident, top_p=0.9) == [0]


def test_nucleus_of_the_uncertain_distribution_is_eight_tokens():
    # weights e^(-0.2k), k = 0..9, sum 4.770; cumulative after 7 tokens 4.156 (0.871),
    # after 8 tokens 4.403 (0.923): the smallest prefix reaching 0.9 has 8 tokens.
    uncertain = [3.0, 2.8, 2.6, 2.4, 2.2, 2.0, 1.8, 1.6, 1.4, 1.2]
    assert kept(uncertain, top_p=0.9) == list(range(8))


def test_top_p_keeps_the_prefix_reaching_exactly_top_p_and_breaks_ties_by_lower_id():
    # four equal tokens: 0.25 + 0.25 = 0.5 >= 0.5, so exactly the first two ids.
    assert kept([0.0, 0.0, 0.0, 0.0], top_p=0.5) == [0, 1]
    assert kept([0.0, 0.0, 0.0, 0.0], top_p=0.51) == [0, 1, 2]


# -- min-p against top-p: the seed texts' "Comparing top-p and min-p at high temperature (T=1.5)",
# on their logits [8.0, 3.0, 2.5, 2.0, 1.0, 0.0, -1.0, -3.0, -5.0, -8.0], top-p 0.9 and min-p 0.1

SEED_MIN_P_LOGITS = [8.0, 3.0, 2.5, 2.0, 1.0, 0.0, -1.0, -3.0, -5.0, -8.0]


def test_seed_min_p_against_top_p_at_high_temperature():
    # At T = 1.5 the weights relative to the top are e^(-3.33) = 0.036, e^(-3.67) = 0.026, ...,
    # summing to 1.097, so p_top = 0.911 >= 0.9: top-p keeps 1 token; min-p 0.1 keeps only tokens
    # with p >= 0.1 p_top, i.e. relative weight >= 0.1: also just the top one.
    assert kept(SEED_MIN_P_LOGITS, temperature=1.5, top_p=0.9) == [0]
    assert kept(SEED_MIN_P_LOGITS, temperature=1.5, min_p=0.1) == [0]
    # min_p 0.02 keeps relative weights 1, 0.036, 0.026 (0.018 < 0.02); top_p 0.95 needs
    # 0.911 + 0.033 = 0.944 < 0.95, + 0.023 = 0.967: also three tokens.
    assert kept(SEED_MIN_P_LOGITS, temperature=1.5, min_p=0.02) == [0, 1, 2]
    assert kept(SEED_MIN_P_LOGITS, temperature=1.5, top_p=0.95) == [0, 1, 2]


def test_min_p_cuts_a_long_flat_tail_that_top_p_keeps():
    # two tokens at 0 and twenty at -3: p = 1/2.9957 = 0.3338 each, tail 0.01662 each.
    # top-p 0.9: 0.6676 + 14 x 0.01662 = 0.9003 >= 0.9 (13 give 0.8837): 16 tokens.
    # min-p 0.1: e^-3 = 0.0498 < 0.1: only the two.
    logits = [0.0, 0.0] + [-3.0] * 20
    assert len(kept(logits, top_p=0.9)) == 16
    assert kept(logits, min_p=0.1) == [0, 1]


def test_min_p_boundary_is_inclusive():
    # p = 1, 0.5, 0.2, 0.05 (unnormalized): 0.2 >= 0.2 x 1 stays, 0.05 goes.
    assert kept(logits_for([1.0, 0.5, 0.2, 0.05]), min_p=0.2) == [0, 1, 2]


# -- top-k ---------------------------------------------------------------------------------------


def test_top_k_keeps_k_and_breaks_ties_by_lower_id():
    assert kept([1.0, 2.0, 2.0, 2.0, 0.0], top_k=2) == [1, 2]
    assert kept([1.0, 2.0, 2.0, 2.0, 0.0], top_k=4) == [0, 1, 2, 3]
    assert kept([1.0, 2.0], top_k=5) == [0, 1]


# -- typical-p -----------------------------------------------------------------------------------


def test_typical_p_prefers_the_token_whose_surprise_is_closest_to_the_entropy():
    # p = 0.6, 0.2, 0.1, 0.1: H = 0.6 ln(1/0.6) + 0.2 ln 5 + 0.2 ln 10 = 1.0889 nats.
    # |-ln p - H| = 0.578, 0.520, 1.214, 1.214: order 1, 0, 2, 3.
    logits = logits_for([0.6, 0.2, 0.1, 0.1])
    assert kept(logits, typical_p=0.15) == [1]  # 0.2 >= 0.15 already
    assert kept(logits, typical_p=0.5) == [0, 1]  # 0.2 + 0.6
    assert kept(logits, typical_p=0.85) == [0, 1, 2]  # + 0.1, tie of 2 and 3: lower id first


# -- top-n-sigma ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n, expected", [(1.0, [4]), (2.2, [3, 4]), (3.0, [0, 1, 2, 3, 4])])
def test_top_n_sigma(n, expected):
    # mean 3.2, population variance (10.24 + 4.84 + 1.44 + 0.04 + 46.24) / 5 = 12.56, sigma 3.544
    # thresholds: 10 - 3.544 = 6.46; 10 - 7.80 = 2.20; 10 - 10.63 = -0.63.
    assert kept([0.0, 1.0, 2.0, 3.0, 10.0], top_n_sigma=n) == expected


def test_top_n_sigma_does_not_depend_on_temperature_in_either_order():
    logits = [0.0, 1.0, 2.0, 3.0, 10.0]
    last = ("top_n_sigma",)
    order = tuple(n for n in SamplingParams().sampler_order if n != "top_n_sigma") + last
    for t in (0.5, 1.5):
        assert kept(logits, top_n_sigma=2.2, temperature=t) == [3, 4]
        assert kept(logits, top_n_sigma=2.2, temperature=t, sampler_order=order) == [3, 4]


# -- epsilon and eta -----------------------------------------------------------------------------


def test_epsilon_cutoff():
    assert kept(logits_for([0.5, 0.3, 0.15, 0.05]), epsilon_cutoff=0.1) == [0, 1, 2]
    assert kept(logits_for([0.5, 0.3, 0.15, 0.05]), epsilon_cutoff=0.6) == [0]  # keeps the top one


def test_eta_cutoff():
    # H = 0.5 ln 2 + 0.3 ln(1/0.3) + 0.15 ln(1/0.15) + 0.05 ln 20 = 1.1423 nats, e^-H = 0.3191.
    # eta 0.1: min(0.1, 0.3162 x 0.3191 = 0.1009) = 0.1 -> drop 0.05.
    # eta 0.3: min(0.3, 0.5477 x 0.3191 = 0.1748) = 0.1748 -> drop 0.15 and 0.05.
    logits = logits_for([0.5, 0.3, 0.15, 0.05])
    assert kept(logits, eta_cutoff=0.1) == [0, 1, 2]
    assert kept(logits, eta_cutoff=0.3) == [0, 1]


# -- penalties: the seed texts' examples ---------------------------------------------------------
# "the model wants to repeat "the" (token_id=1)": logits [8.2, 5.5, 2.8, 2.5, 2.0], penalty=1.2,
# "only 'the' is penalized, regardless of how many times it appeared"; then ""the" appeared 5
# times, "is" appeared 2 times": logits [8.2, 5.5, 4.0, 2.8, 2.5], frequency penalty=0.5 and
# presence penalty=0.6 on the "same example".


def _log_ratios(p):
    """ln(p_i / p_0): the logits up to the shift softmax ignores."""
    return np.log(p / p[0])


def test_seed_repetition_penalty_example():
    # logits [8.2, 5.5, 2.8, 2.5, 2.0], "the" (id 1) seen three times, penalty 1.2:
    # only 'the' changes, 5.5 / 1.2 = 4.583, however often it appeared.
    p = dist([8.2, 5.5, 2.8, 2.5, 2.0], [1, 1, 1], repetition_penalty=1.2)
    expected = np.array([8.2, 5.5 / 1.2, 2.8, 2.5, 2.0]) - 8.2
    assert _log_ratios(p) == pytest.approx(expected, abs=1e-9)


def test_repetition_penalty_multiplies_negative_logits():
    p = dist([1.0, -2.0], [1], repetition_penalty=2.0)
    assert _log_ratios(p)[1] == pytest.approx(-4.0 - 1.0)


def test_seed_frequency_penalty_example():
    # "the" (1) 5 times, "is" (2) twice, penalty 0.5: 5.5 - 2.5 = 3.0, 4.0 - 1.0 = 3.0.
    p = dist([8.2, 5.5, 4.0, 2.8, 2.5], [1] * 5 + [2] * 2, frequency_penalty=0.5)
    assert _log_ratios(p) == pytest.approx(np.array([8.2, 3.0, 3.0, 2.8, 2.5]) - 8.2, abs=1e-9)


def test_seed_presence_penalty_example():
    # same counts, presence 0.6: both lose exactly 0.6 -> 4.9 and 3.4.
    p = dist([8.2, 5.5, 4.0, 2.8, 2.5], [1] * 5 + [2] * 2, presence_penalty=0.6)
    assert _log_ratios(p) == pytest.approx(np.array([8.2, 4.9, 3.4, 2.8, 2.5]) - 8.2, abs=1e-9)


def test_penalty_window_only_counts_the_last_tokens():
    # window 2 sees [2, 2]: token 1 (seen earlier) is not penalized, token 2 twice.
    p = dist([0.0, 0.0, 0.0], [1, 1, 2, 2], frequency_penalty=1.0, penalty_window=2)
    assert _log_ratios(p) == pytest.approx([0.0, 0.0, -2.0], abs=1e-9)


def test_logit_bias_adds_to_logits():
    p = dist([0.0, 0.0, 0.0], logit_bias={2: math.log(2)})
    assert p == pytest.approx([0.25, 0.25, 0.5])


# -- DRY (llama.cpp's worked example) ------------------------------------------------------------

A, B, C, Y, Z = range(5)
DRY_HISTORY = [A, B, C, C, B, C, Y, A, B, C]  # "a b c c b c y a b c"


def test_dry_penalizes_tokens_that_would_extend_a_repeat():
    # The suffix "a b c" also ends at position 2, followed by c: c would make a repeat of 4,
    # n = 3 >= allowed 2 -> c -= 0.8 x 1.75^(3-2) = 1.4. "b c" also ends at 5, followed by y:
    # n = 2 -> y -= 0.8 x 1.75^0 = 0.8. "c" at 3 is followed by b, but n = 1 < 2.
    p = dist([0.0] * 5, DRY_HISTORY, dry_multiplier=0.8, dry_base=1.75, dry_allowed_length=2)
    assert _log_ratios(p) == pytest.approx([0.0, 0.0, -1.4, -0.8, 0.0], abs=1e-9)


def test_dry_sequence_breakers_stop_matches_and_are_never_penalized():
    texts = ["a", "b", "c", "y:", "z"]  # "y:" contains the breaker ":"
    chain = SamplerChain(SamplingParams(dry_multiplier=0.8), token_texts=texts)
    p = chain.distribution(np.zeros(5), DRY_HISTORY)
    assert _log_ratios(p) == pytest.approx([0.0, 0.0, -1.4, 0.0, 0.0], abs=1e-9)
    # a breaker as the last token: nothing can repeat across it.
    p = chain.distribution(np.zeros(5), DRY_HISTORY + [Y])
    assert np.allclose(p, 0.2)


def test_dry_window():
    # only the last 4 tokens "y a b c": no earlier occurrence of any suffix.
    p = dist([0.0] * 5, DRY_HISTORY, dry_multiplier=0.8, dry_penalty_last_n=4)
    assert np.allclose(p, 0.2)


# -- no-repeat n-gram ----------------------------------------------------------------------------


def test_no_repeat_ngram_removes_the_token_completing_a_seen_trigram():
    # history 0 1 2 0 1, size 3: the last two tokens "0 1" were once followed by 2.
    chain = SamplerChain(SamplingParams(no_repeat_ngram_size=3))
    trace = chain.trace(np.zeros(4), [0, 1, 2, 0, 1])
    assert trace.removed_by(2) == "no_repeat_ngram"
    assert chain.distribution(np.zeros(4), [0, 1, 2, 0, 1]).tolist() == pytest.approx([1 / 3, 1 / 3, 0, 1 / 3])
    # size 1 bans every token of the history; all banned keeps the most likely one
    assert kept([0.0, 1.0, 0.5], [0, 1, 2], no_repeat_ngram_size=1) == [1]


# -- dynamic temperature -------------------------------------------------------------------------


def test_dynamic_temperature_scales_with_normalized_entropy():
    # two candidates, logits 1 and 0: p = 0.731, 0.269; H / ln 2 = 0.840; with T = 1, range 0.5,
    # exponent 1: T_dyn = 0.5 + (1.5 - 0.5) x 0.840 = 1.340, p_0 = 1 / (1 + e^(-1 / 1.340)).
    p0 = softmax([1.0, 0.0])[0]
    h = -(p0 * math.log(p0) + (1 - p0) * math.log(1 - p0))
    t_dyn = 0.5 + 1.0 * (h / math.log(2))
    assert t_dyn == pytest.approx(1.340, abs=1e-3)
    p = dist([1.0, 0.0], dynatemp_range=0.5)
    assert p[0] == pytest.approx(1 / (1 + math.exp(-1 / t_dyn)), rel=1e-12)


def test_dynamic_temperature_replaces_plain_temperature():
    chain = SamplerChain(SamplingParams(temperature=0.7, dynatemp_range=0.3))
    assert chain.stage_names == ("dynamic_temperature",)


# -- XTC -----------------------------------------------------------------------------------------


def test_xtc_removes_all_top_choices_but_the_least_likely():
    # p >= 0.1: tokens 0, 1, 2; all but the least likely (2) go; 0.15 : 0.05 -> 0.75, 0.25.
    p = dist(logits_for([0.5, 0.3, 0.15, 0.05]), xtc_probability=1.0, xtc_threshold=0.1, seed=7)
    assert p == pytest.approx([0.0, 0.0, 0.75, 0.25])


def test_xtc_coin_comes_from_its_own_stream():
    seed = 11
    coin = np.random.default_rng([seed, XTC_STREAM]).random()
    logits = logits_for([0.5, 0.3, 0.15, 0.05])
    below = dist(logits, xtc_probability=min(1.0, coin + 1e-9), xtc_threshold=0.1, seed=seed)
    above = dist(logits, xtc_probability=coin / 2, xtc_threshold=0.1, seed=seed)
    assert below[0] == 0.0 and above[0] == pytest.approx(0.5)


def test_xtc_needs_a_seed():
    with pytest.raises(ValueError) as err:
        SamplerChain(SamplingParams(xtc_probability=0.5))
    assert err.value.param == "seed"


# -- mirostat v2 ---------------------------------------------------------------------------------


def test_mirostat_truncates_by_surprise_and_updates_mu():
    # surprises -log2 p: 1, 1.737, 2.737, 4.32; tau 1 -> mu 2 keeps tokens 0 and 1,
    # renormalized 0.625 / 0.375.
    chain = SamplerChain(SamplingParams(mirostat=2, mirostat_tau=1.0, mirostat_eta=0.1))
    logits = logits_for([0.5, 0.3, 0.15, 0.05])
    assert chain.distribution(logits, []) == pytest.approx([0.625, 0.375, 0, 0])
    step = chain.step(logits, [], ScriptedRng(0.7))  # 0.7 > 0.625: token 1
    assert step.token == 1
    mirostat = chain.stages[-1]
    # mu = 2 - 0.1 x (-log2 0.375 - 1) = 2 - 0.1 x 0.415 = 1.9585
    assert mirostat.mu == pytest.approx(2 - 0.1 * (-math.log2(0.375) - 1))
    chain.reset()
    assert mirostat.mu == 2.0
