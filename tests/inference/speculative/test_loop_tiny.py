"""Speculative decoding in the generation loop, on the tiny random model: the parameter's checks,
the output's distribution (a chi-square test of many seeded runs against the exact probabilities
of the plain chain), and the cache after a rejection.

The tiny model's own distribution is nearly flat, so the runs steer it with ``logit_bias`` onto
three colour tokens; a presence penalty makes each position's distribution depend on the tokens
accepted before it, and prompt lookup then drafts from the repeating colours."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from inference.decoding.generation import Generation, GenerationRequest, SpeculativeDriver, TokenStep, Verification, run
from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.errors import ParamError
from inference.sampling import SamplerChain, SamplingParams

from ..helpers import logits_along

PROMPT = " red green blue red green blue red"
RUNS = 500
TOKENS = 4


def sampling(colours, seed: int | None = None, temperature: float = 1.0) -> SamplingParams:
    bias = {colours[0]: 100.0, colours[1]: 99.5, colours[2]: 99.5}
    return SamplingParams(temperature=temperature, seed=seed, logit_bias=bias, presence_penalty=0.7)


def request(colours, seed=None, k=2, max_tokens=TOKENS, temperature=1.0, **loop) -> GenerationRequest:
    return GenerationRequest(
        PROMPT,
        sampling=sampling(colours, seed, temperature),
        loop=LoopParams(max_tokens=max_tokens, ignore_eos=True, **loop),
        speculative=None if k is None else SpeculativeParams(k=k),
    )


# -- the parameter -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"draft": "oracle"}, "speculative.draft"),
        ({"k": 0}, "speculative.k"),
        ({"k": 9}, "speculative.k"),
        ({"k": 2.0}, "speculative.k"),
        ({"k": True}, "speculative.k"),
        ({"depth": 2}, "speculative.depth"),
        ({"switch_off": 0}, "speculative.switch_off"),
        ({"switch_off": None}, "speculative.switch_off"),
        ({"switch_off": "false"}, "speculative.switch_off"),
        ("prompt_lookup", "speculative"),
    ],
)
def test_bad_speculative_values_are_refused_by_field(value, field):
    with pytest.raises(ParamError) as caught:
        SpeculativeParams.from_value(value)
    assert caught.value.param == field


def test_the_parameter_reads_its_defaults_and_null():
    assert SpeculativeParams.from_value(None) is None
    assert SpeculativeParams.from_value({"k": 8}) == SpeculativeParams("prompt_lookup", 8, switch_off=True)
    assert SpeculativeParams.from_value({"switch_off": False}) == SpeculativeParams("prompt_lookup", 4, switch_off=False)
    assert SpeculativeParams("fast", 2, switch_off=False).to_dict() == {"draft": "fast", "k": 2, "switch_off": False}
    facts = SpeculativeParams.field_facts()
    assert (facts["k"]["low"], facts["k"]["high"], facts["draft"]["choices"]) == (1, 8, ["prompt_lookup", "fast"])
    assert facts["switch_off"] == {"kind": "boolean", "default": True}


@pytest.mark.parametrize("loop", [{"n": 2}, {"num_beams": 2}])
def test_speculation_runs_one_sample_only(tiny_runtime, colours, loop):
    with pytest.raises(ParamError) as caught:
        list(run(tiny_runtime, request(colours, seed=1, **loop)))
    assert caught.value.param == "speculative"


# -- the record ----------------------------------------------------------------------------------


def test_every_verification_lists_its_checks_and_the_steps_follow_it(tiny_runtime, colours):
    items = list(run(tiny_runtime, request(colours, seed=5, k=3, max_tokens=24)))
    steps = [item for item in items if isinstance(item, TokenStep)]
    verifications = [item for item in items if isinstance(item, Verification)]
    assert verifications and [s.index for s in steps] == list(range(24))
    for verification in verifications:
        after = [s for s in steps if s.index >= verification.index][: len(verification.checks) + 1]
        for check, step in zip(verification.checks, after):
            assert step.token_id == check.token and step.drafted == check.accepted
            assert step.trace.draw == check.draw and check.q == 1.0
            assert check.p == pytest.approx(step.trace.lookup.describe(check.draft).prob)  # the chain's final p
        if verification.corrected is not None:
            assert not verification.checks[-1].accepted and verification.bonus is None
        elif verification.bonus is not None:
            assert all(c.accepted for c in verification.checks)
            assert after[len(verification.checks)].token_id == verification.bonus
    totals = items[-1].speculative
    # One definition (``SpeculativeTotals``): every drafted token, the checked ones, the accepted ones.
    assert totals.drafted == sum(len(v.drafted) for v in verifications)
    assert totals.checked == sum(len(v.checks) for v in verifications)
    assert totals.accepted == sum(v.accepted for v in verifications) == sum(s.drafted for s in steps) > 0
    assert totals.accepted < totals.checked < totals.drafted  # rejections, and drafts after them never checked


# -- exactness -----------------------------------------------------------------------------------


def exact_path_probabilities(runtime, colours, prompt_ids) -> dict[tuple[int, ...], float]:
    """P(first TOKENS tokens) of the plain chain, multiplied out along every path of colours."""
    chain = SamplerChain(sampling(colours, seed=0))
    probabilities: dict[tuple[int, ...], float] = {}
    for path in itertools.product(colours, repeat=TOKENS):
        logits = logits_along(runtime, prompt_ids, path[:-1])
        p = 1.0
        for i, token in enumerate(path):
            p *= float(chain.distribution(logits[i], path[:i])[token])
        probabilities[path] = p
    return probabilities


def chi_square_limit(dof: int, z: float = 3.09) -> float:
    """The chi-square value that dof degrees of freedom exceed with probability 0.001
    (Wilson–Hilferty: z = 3.09 is the normal's 0.999 quantile)."""
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def chi_square(counts: Counter, expected: dict[tuple[int, ...], float], runs: int) -> tuple[float, float]:
    """The chi-square statistic of ``counts`` against ``expected`` probabilities, and its 0.001
    limit; cells expected fewer than 5 times are pooled into one."""
    big = [path for path, p in expected.items() if p * runs >= 5]
    observed = [counts[path] for path in big] + [runs - sum(counts[path] for path in big)]
    wanted = [expected[path] * runs for path in big] + [runs * (1 - sum(expected[path] for path in big))]
    chi2 = sum((o - e) ** 2 / e for o, e in zip(observed, wanted) if e > 0)
    return chi2, chi_square_limit(len(observed) - 1)


@pytest.mark.parametrize("k", [1, 3])
def test_speculative_samples_are_distributed_as_the_plain_chains(tiny_runtime, colours, k):
    prompt_ids = tiny_runtime.codec.encode(PROMPT, "completion")
    expected = exact_path_probabilities(tiny_runtime, colours, prompt_ids)
    assert sum(expected.values()) == pytest.approx(1.0, abs=1e-6)
    counts: Counter[tuple[int, ...]] = Counter()
    rejected = 0
    for seed in range(RUNS):
        items = list(run(tiny_runtime, request(colours, seed=10_000 + seed, k=k)))
        counts[tuple(item.token_id for item in items if isinstance(item, TokenStep))] += 1
        rejected += items[-1].speculative.checked - items[-1].speculative.accepted
    assert rejected > RUNS // 4  # the rule's both branches ran many times
    chi2, limit = chi_square(counts, expected, RUNS)
    assert chi2 < limit, (chi2, limit)


def test_greedy_speculation_gives_the_plain_tokens(tiny_runtime, colours):
    plain = [
        i.token_id
        for i in run(tiny_runtime, request(colours, k=None, max_tokens=20, temperature=0.0))
        if isinstance(i, TokenStep)
    ]
    fast = [
        i.token_id for i in run(tiny_runtime, request(colours, k=4, max_tokens=20, temperature=0.0)) if isinstance(i, TokenStep)
    ]
    assert fast == plain


# -- the cache -----------------------------------------------------------------------------------


def test_after_a_rejection_the_cache_is_a_plain_runs(tiny_runtime, colours):
    generation = Generation(tiny_runtime, request(colours, seed=3, k=3, max_tokens=40))
    driver = SpeculativeDriver(tiny_runtime, generation)
    driver.start()
    rejected = None
    while not generation.is_done() and rejected is None:
        items = driver.step()
        rejected = next((i for i in items if isinstance(i, Verification) and i.corrected is not None), None)
    assert rejected is not None, "no draft was rejected in 40 tokens"
    sample = generation.samples[0]
    fed = generation.prompt_ids + sample.generated[:-1]  # the corrected token is pending, not yet fed
    assert driver.state.ids[0].tolist() == fed
    plain = tiny_runtime.decoder.new_state()
    plain.append_tokens(generation.prompt_ids)
    for token in sample.generated[:-1]:
        plain.append_tokens([token])
    length = len(fed)
    for ours, theirs in zip(driver.state._past.buffers, plain._past.buffers):
        np.testing.assert_allclose(ours[:, :, :length], theirs[:, :, :length], rtol=1e-4, atol=1e-5)
    # and the next logits, after the corrected token, are the plain run's
    np.testing.assert_allclose(
        driver.state.append_tokens([sample.generated[-1]]), plain.append_tokens([sample.generated[-1]]), rtol=1e-4, atol=1e-4
    )
