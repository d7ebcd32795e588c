"""The generation loop on the real SmolLM2 model, where the real model's behaviour is the point:
what it answers, and that its 4-bit kernels give the same tokens whether the KV cache is used,
whether samples are batched, and whether a path is scored in a beam or alone.

The loop's mechanics (seeds, stop strings, min_tokens, prefixes, cancel, streaming text, the
beam tree) are tested on the tiny model: test_generation_tiny.py and test_beam.py.
"""

from __future__ import annotations

import pytest

from inference.decoding.generation import GenerationRequest, run
from inference.decoding.loop_params import LoopParams
from inference.sampling import SamplingParams
from tests.inference.helpers import collect

pytestmark = pytest.mark.real_model


def greedy(prompt, max_tokens=8, **stopping):
    return GenerationRequest(prompt, sampling=SamplingParams(temperature=0.0), loop=LoopParams(max_tokens=max_tokens, **stopping))


def test_greedy_capital_of_france_is_paris(real_runtime):
    _, steps, finished = collect(real_runtime, greedy("The capital of France is"))
    assert steps[0].text == " Paris"
    assert steps[0].trace.draw is None  # greedy draws nothing
    assert finished.text.startswith(" Paris")
    assert finished.reason == "max_tokens" and finished.completion_tokens == 8


def test_chat_mode_wraps_the_message_and_ends_on_im_end(real_runtime):
    request = GenerationRequest(
        "What is the capital of France?",
        mode="chat",
        sampling=SamplingParams(temperature=0.0),
        loop=LoopParams(max_tokens=64),
    )
    started, steps, finished = collect(real_runtime, request)
    prompt_text = real_runtime.codec.decode(started.prompt_ids)
    assert prompt_text.startswith("<|im_start|>system\n") and prompt_text.endswith("<|im_start|>assistant\n")
    assert "Paris" in finished.text
    assert finished.reason == "eos"
    assert steps[-1].token_id in real_runtime.codec.eos_ids
    assert "<|im_end|>" not in finished.text


def test_no_kv_cache_gives_the_same_greedy_tokens(real_runtime):
    with_cache = collect(real_runtime, greedy("The quick brown fox", max_tokens=10))[1]
    without = collect(
        real_runtime,
        GenerationRequest(
            "The quick brown fox",
            sampling=SamplingParams(temperature=0.0),
            loop=LoopParams(max_tokens=10),
            use_cache=False,
        ),
    )[1]
    assert [s.token_id for s in with_cache] == [s.token_id for s in without]


def test_n_samples_run_as_one_batch_each_seeded_seed_plus_i(real_runtime):
    def request(n, seed):
        return GenerationRequest(
            "My favourite animal is",
            sampling=SamplingParams(temperature=1.0, seed=seed),
            loop=LoopParams(max_tokens=12, n=n),
        )

    _, steps, finished = collect(real_runtime, request(3, 100))
    assert len(finished.samples) == 3
    by_sample = {i: [s.token_id for s in steps if s.sample == i] for i in range(3)}
    # each sample equals the single run seeded seed + i
    for i in range(3):
        alone = collect(real_runtime, request(1, 100 + i))[2]
        assert finished.samples[i].token_ids == alone.samples[0].token_ids == tuple(by_sample[i])
        assert finished.samples[i].text == alone.text
    assert len({finished.samples[i].token_ids for i in range(3)}) > 1


def beam_request(num_beams, max_tokens=12, length_penalty=1.0, prompt="The capital of France is"):
    return GenerationRequest(prompt, loop=LoopParams(max_tokens=max_tokens, num_beams=num_beams, length_penalty=length_penalty))


def test_beam_search_is_deterministic_and_ranks_by_score(real_runtime):
    items = list(run(real_runtime, beam_request(3)))
    again = list(run(real_runtime, beam_request(3)))
    finished = items[-1]
    assert finished.beams == again[-1].beams
    assert len(finished.beams) == 3
    scores = [h.score for h in finished.beams]
    assert scores == sorted(scores, reverse=True)
    for h in finished.beams:
        assert h.score == pytest.approx(h.cum_logprob / len(h.token_ids) ** 1.0)
    assert finished.text.startswith(" Paris")


def test_beam_search_cumulative_logprob_matches_the_model(real_runtime):
    """Re-score the best hypothesis token by token with a plain greedy-free forward pass."""
    from inference.decoding.beam import log_softmax

    finished = list(run(real_runtime, beam_request(2, max_tokens=6)))[-1]
    best = finished.beams[0]
    state = real_runtime.decoder.new_state()
    logits = state.append_tokens(real_runtime.codec.encode("The capital of France is", "completion"))
    total = 0.0
    for token in best.token_ids:
        total += float(log_softmax(logits)[0, token])
        logits = state.append_tokens([token])
    assert total == pytest.approx(best.cum_logprob, abs=1e-4)
