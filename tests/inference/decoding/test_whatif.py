"""The what-if on the tiny random model: the logits of a run's position, found again the way the
run computed them, and the sampler chain re-run on them under other settings."""

from __future__ import annotations

import numpy as np
import pytest

from inference.decoding.generation import GenerationRequest
from inference.decoding.loop_params import LoopParams
from inference.decoding.whatif import Cancelled, LogitsCache, inspect_position, inspect_variants
from inference.sampling import SamplerChain, SamplingParams
from tests.inference.helpers import collect, recording

PROMPT = "Once upon a time"

VARIANTS = [
    SamplingParams(),
    SamplingParams(temperature=0.0),
    SamplingParams(temperature=0.5, top_k=20),
    SamplingParams(temperature=1.3, top_p=0.5, min_p=0.02),
    SamplingParams(repetition_penalty=1.5, presence_penalty=0.5, top_k=40),
]


@pytest.fixture(scope="module")
def sampled_run(tiny_runtime):
    """A sampled run of 8 tokens with the logits the decoder gave at each of its positions."""
    runtime, decoder = recording(tiny_runtime)
    params = SamplingParams(temperature=0.8, top_k=50, seed=21)
    started, steps, _ = collect(runtime, GenerationRequest(PROMPT, sampling=params, loop=LoopParams(max_tokens=8)))
    (state,) = decoder.states
    return params, started.prompt_ids, steps, [call.logits[0] for call in state.calls]


def test_the_cache_finds_a_runs_logits_at_every_position_exactly(tiny_runtime, sampled_run):
    _, prompt_ids, steps, run_logits = sampled_run
    generated = [s.token_id for s in steps]
    for i in reversed(range(len(steps))):  # the last first: the way there fills the cache
        logits = LogitsCache().logits(tiny_runtime, prompt_ids, generated[:i])
        np.testing.assert_array_equal(logits, run_logits[i])


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda p: ",".join(p.enabled_stages()) or "none")
def test_each_variant_is_the_chains_own_view_of_the_same_logits(tiny_runtime, sampled_run, variant):
    _, prompt_ids, steps, run_logits = sampled_run
    position = 5
    history = [s.token_id for s in steps[:position]]
    texts = tiny_runtime.codec.token_texts()
    (result,) = inspect_position(run_logits[position], history, [variant], texts, top_n=6)
    chain = SamplerChain(variant, token_texts=texts)
    assert result.params == variant
    assert result.trace.to_dict() == chain.trace(run_logits[position], history, top_n=6).to_dict()
    final = chain.distribution(run_logits[position], history)
    order = sorted((i for i in range(final.size) if final[i] > 0), key=lambda i: (-final[i], i))[:6]
    assert result.top_final == tuple((i, float(final[i])) for i in order)
    if variant.temperature == 0.0:
        assert result.top_final == ((int(np.argmax(run_logits[position])), 1.0),)


def test_the_runs_own_settings_give_back_the_runs_step(tiny_runtime, sampled_run):
    params, prompt_ids, steps, _ = sampled_run
    generated = [s.token_id for s in steps]
    cache = LogitsCache()
    texts = tiny_runtime.codec.token_texts()
    for i, step in enumerate(steps):
        logits = cache.logits(tiny_runtime, prompt_ids, generated[:i])
        (variant,) = inspect_position(logits, generated[:i], [params], texts, top_n=50)  # every token top-k keeps
        assert variant.trace.alternatives[:5] == step.trace.alternatives
        assert variant.trace.stages == step.trace.stages
        assert variant.trace.describe(step.token_id) == step.trace.chosen
        assert dict(variant.top_final).get(step.token_id) == step.trace.prob


def test_variants_differ_where_their_settings_do(tiny_runtime, sampled_run):
    _, _, steps, run_logits = sampled_run
    texts = tiny_runtime.codec.token_texts()
    variants = inspect_position(run_logits[3], [s.token_id for s in steps[:3]], VARIANTS, texts, top_n=5)
    assert [v.params for v in variants] == VARIANTS
    kept = [v.trace.stages[-1].kept if v.trace.stages else tiny_runtime.shape.vocab_size for v in variants]
    assert kept[1] == 1 and kept[2] == 20 and kept[0] == tiny_runtime.shape.vocab_size
    sharp, flat = variants[2].top_final[0][1], variants[0].top_final[0][1]
    assert sharp > flat  # T = 0.5 over 20 tokens concentrates what T = 1 spreads over all


def test_top_n_above_the_vocabulary_lists_every_token_still_possible():
    logits = np.array([2.0, 1.0, 0.5, 0.5, -1.0])
    (result,) = inspect_position(logits, [], [SamplingParams(top_k=3)], ["a", "b", "c", "d", "e"], top_n=10)
    p = np.exp(logits[:3] - logits[:3].max())
    p /= p.sum()
    # top-k keeps 3: the tie at 0.5 goes to the lower id
    assert [i for i, _ in result.top_final] == [0, 1, 2]
    np.testing.assert_allclose([q for _, q in result.top_final], p, rtol=1e-12)


# -- LogitsCache -----------------------------------------------------------------------------------


def test_a_cached_position_costs_no_decoder_call_and_so_do_the_ones_on_its_way(tiny_runtime, sampled_run):
    _, prompt_ids, steps, _ = sampled_run
    generated = [s.token_id for s in steps]
    runtime, decoder = recording(tiny_runtime)
    cache = LogitsCache()
    first = cache.logits(runtime, prompt_ids, generated[:6])
    assert [call.ids.shape for call in decoder.calls] == [(1, len(prompt_ids))] + [(1, 1)] * 6  # the run's route
    for i in range(7):
        cache.logits(runtime, prompt_ids, generated[:i])
    assert cache.logits(runtime, prompt_ids, generated[:6]) is first
    assert len(decoder.calls) == 7  # nothing recomputed
    with pytest.raises(ValueError):
        first[0] = 0.0  # shared answers are read-only


def test_the_least_recently_used_positions_are_dropped_beyond_capacity(tiny_runtime, sampled_run):
    _, prompt_ids, steps, _ = sampled_run
    generated = [s.token_id for s in steps]
    runtime, decoder = recording(tiny_runtime)
    cache = LogitsCache(capacity=3)

    def cost(generated_ids, prompt=prompt_ids) -> int:
        before = len(decoder.calls)
        cache.logits(runtime, prompt, generated_ids)
        return len(decoder.calls) - before

    assert cost(generated[:5]) == 6  # keeps the last three positions on the way: after 3, 4 and 5 tokens
    assert [cost(generated[:i]) for i in (3, 4, 5)] == [0, 0, 0]
    assert cost(generated[:2]) == 3  # dropped: from the prompt again, and now only the way to 2 is kept
    assert cost(generated[:5]) == 6
    # least recently used, not first in: touch the oldest, then add one position
    assert cost(generated[:3]) == 0
    assert cost([], prompt=prompt_ids[:-1]) == 1  # another prompt: one position, one eviction (after 4 tokens)
    assert [cost(generated[:i]) for i in (3, 5)] == [0, 0]
    assert cost(generated[:4]) == 5


def test_a_cancelled_inspection_stops_within_one_token(tiny_runtime, sampled_run):
    _, prompt_ids, steps, _ = sampled_run
    generated = [s.token_id for s in steps]
    runtime, decoder = recording(tiny_runtime)
    cache = LogitsCache()
    asked = []

    def cancelled():
        asked.append(len(decoder.calls))
        return len(asked) > 2

    with pytest.raises(Cancelled):
        cache.logits(runtime, prompt_ids, generated[:7], is_cancelled=cancelled)
    assert asked == [0, 1, 2]  # asked before the prompt's (one-chunk) prefill and before every token
    assert len(decoder.calls) == 2  # the prompt and one token, then it stopped
    cache.logits(runtime, prompt_ids, generated[:1])  # what was computed on the way is kept
    assert len(decoder.calls) == 2


def test_inspecting_a_run_applies_its_own_rules_min_tokens_and_penalize_prompt(tiny_runtime):
    """``inspect_variants`` sees each position as the run did: no end of sequence before
    ``min_tokens`` new tokens, penalties counting the prompt with ``penalize_prompt`` (the rules of
    ``inference.decoding.generation``, not a copy of them)."""
    params = SamplingParams(temperature=0.9, repetition_penalty=1.6, presence_penalty=0.7, seed=5)
    loop = LoopParams(max_tokens=6, min_tokens=6, penalize_prompt=True)
    started, steps, _ = collect(tiny_runtime, GenerationRequest(PROMPT, sampling=params, loop=loop))
    generated = [s.token_id for s in steps]
    cache = LogitsCache()
    for i, step in enumerate(steps):
        (variant,) = inspect_variants(tiny_runtime, started.prompt_ids, generated[:i], [(params, loop)], 50, cache)
        assert variant.trace.stages == step.trace.stages  # what each stage kept: the end of sequence held off
        assert variant.trace.alternatives[:5] == step.trace.alternatives  # penalized as the run was
        assert variant.trace.describe(step.token_id) == step.trace.chosen
