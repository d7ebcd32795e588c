"""The generation loop on the real SmolLM2 model: greedy facts, seeds, streaming text, stopping."""

from __future__ import annotations

import pytest

from inference.generation import Finished, Generation, GenerationRequest, Started, TokenStep, run
from inference.sampling import SamplingParams
from inference.loop_params import LoopParams

pytestmark = pytest.mark.real_model


def collect(runtime, request, is_cancelled=lambda: False):
    items = list(run(runtime, request, is_cancelled))
    started = items[0]
    steps = [i for i in items if isinstance(i, TokenStep)]
    finished = items[-1]
    assert isinstance(started, Started) and isinstance(finished, Finished)
    return started, steps, finished


def greedy(prompt, max_tokens=8, **stopping):
    return GenerationRequest(
        prompt, sampling=SamplingParams(temperature=0.0), loop=LoopParams(max_tokens=max_tokens, **stopping)
    )


def test_greedy_capital_of_france_is_paris(real_runtime):
    _, steps, finished = collect(real_runtime, greedy("The capital of France is"))
    assert steps[0].text == " Paris"
    assert steps[0].trace.draw is None  # greedy draws nothing
    assert finished.text.startswith(" Paris")
    assert finished.reason == "max_tokens" and finished.completion_tokens == 8


def test_completion_prompt_starts_a_fresh_document(real_runtime):
    started, _, _ = collect(real_runtime, greedy("The capital of France is", max_tokens=1))
    assert real_runtime.codec.decode(started.prompt_ids) == "<|endoftext|>The capital of France is"
    assert started.prompt_ids[0] == real_runtime.codec.token_id("<|endoftext|>")


def test_chat_mode_wraps_the_message_and_ends_on_im_end(real_runtime):
    request = GenerationRequest(
        "What is the capital of France?", mode="chat",
        sampling=SamplingParams(temperature=0.0), loop=LoopParams(max_tokens=64),
    )
    started, steps, finished = collect(real_runtime, request)
    prompt_text = real_runtime.codec.decode(started.prompt_ids)
    assert prompt_text.startswith("<|im_start|>system\n") and prompt_text.endswith("<|im_start|>assistant\n")
    assert "Paris" in finished.text
    assert finished.reason == "eos"
    assert steps[-1].token_id in real_runtime.codec.eos_ids
    assert "<|im_end|>" not in finished.text


def test_same_seed_same_tokens_and_different_seed_differs(real_runtime):
    def tokens(seed):
        request = GenerationRequest(
            "Once upon a time", sampling=SamplingParams(temperature=1.0, seed=seed), loop=LoopParams(max_tokens=24)
        )
        return [s.token_id for s in collect(real_runtime, request)[1]]

    assert tokens(1234) == tokens(1234)
    assert tokens(1234) != tokens(4321)


def test_a_seed_is_drawn_and_reported_when_none_is_given(real_runtime):
    request = GenerationRequest("Hello", sampling=SamplingParams(temperature=1.0), loop=LoopParams(max_tokens=4))
    started, steps, _ = collect(real_runtime, request)
    replay = GenerationRequest("Hello", sampling=SamplingParams(temperature=1.0, seed=started.seed), loop=LoopParams(max_tokens=4))
    assert [s.token_id for s in collect(real_runtime, replay)[1]] == [s.token_id for s in steps]


@pytest.mark.parametrize("prompt", [
    "Translate to French: I would like a coffee with cream, please. French:",
    "The emoji for a party is",
    "日本の首都は",
    "Write three emoji that mean happy:",
])
def test_pieces_concatenate_to_the_decoded_output(real_runtime, prompt):
    request = GenerationRequest(prompt, sampling=SamplingParams(temperature=1.2, seed=7), loop=LoopParams(max_tokens=40))
    _, steps, finished = collect(real_runtime, request)
    pieces = "".join(s.text for s in steps) + finished.tail
    assert pieces == finished.text
    generated = [s.token_id for s in steps if s.token_id not in real_runtime.codec.eos_ids]
    assert finished.text == real_runtime.codec.decode(generated)


def test_multibyte_tokens_are_never_split(real_runtime):
    """A prompt whose answer needs characters of several tokens: no piece ends mid-character."""
    request = GenerationRequest("🎉🎉🎉 🎊🎊🎊 🎉🎉", sampling=SamplingParams(temperature=0.0), loop=LoopParams(max_tokens=24))
    _, steps, finished = collect(real_runtime, request)
    partial = [s for s in steps if s.text == "" and s.token_id not in real_runtime.codec.eos_ids]
    assert partial, "expected at least one token that is only part of a character"
    assert all("<0x" in real_runtime.codec.token_text(s.token_id) for s in partial)
    assert "".join(s.text for s in steps) + finished.tail == finished.text


def test_stop_string_across_tokens_ends_the_run_and_never_appears(real_runtime):
    _, _, free = collect(real_runtime, greedy("The capital of France is", max_tokens=16))
    # " Paris.\n\nThe capital of France is Paris.\n\nThe only…": the stop spans several tokens, and
    # its start ".\n\nThe" appears earlier, where it must be held back and then released
    stop = ".\n\nThe only"
    assert free.text.count(".\n\nThe") >= 2 and stop in free.text, free.text
    _, steps, finished = collect(real_runtime, greedy("The capital of France is", max_tokens=16, stop=(stop,)))
    assert finished.reason == "stop" and finished.stop_string == stop
    assert finished.text == free.text[: free.text.index(stop)]
    assert "".join(s.text for s in steps) + finished.tail == finished.text
    assert stop not in finished.text


def test_min_tokens_holds_off_end_of_sequence(real_runtime):
    chat = dict(mode="chat", sampling=SamplingParams(temperature=0.0))
    short = collect(real_runtime, GenerationRequest("Say hi.", loop=LoopParams(max_tokens=64), **chat))[2]
    assert short.reason == "eos"
    longer = collect(real_runtime, GenerationRequest(
        "Say hi.", loop=LoopParams(max_tokens=64, min_tokens=short.completion_tokens + 3), **chat,
    ))
    steps = longer[1]
    assert len(steps) >= short.completion_tokens + 3
    assert all(s.token_id not in real_runtime.codec.eos_ids for s in steps[: short.completion_tokens + 3])


def test_cancel_ends_within_one_token(real_runtime):
    produced = []

    def cancelled():
        return len(produced) >= 3

    request = GenerationRequest("Once upon a time", sampling=SamplingParams(temperature=0.0), loop=LoopParams(max_tokens=200))
    for item in run(real_runtime, request, cancelled):
        if isinstance(item, TokenStep):
            produced.append(item)
        last = item
    assert len(produced) == 3
    assert last.reason == "cancelled" and last.completion_tokens == 3
    assert last.text == "".join(s.text for s in produced) + last.tail


def test_no_kv_cache_gives_the_same_greedy_tokens(real_runtime):
    with_cache = collect(real_runtime, greedy("The quick brown fox", max_tokens=10))[1]
    without = collect(real_runtime, GenerationRequest(
        "The quick brown fox", sampling=SamplingParams(temperature=0.0), loop=LoopParams(max_tokens=10), use_cache=False,
    ))[1]
    assert [s.token_id for s in with_cache] == [s.token_id for s in without]


def test_prompt_too_long_is_refused_naming_the_field(real_runtime):
    from inference.errors import ParamError

    window = real_runtime.shape.context_window
    generation = Generation(real_runtime, greedy("word " * 10, max_tokens=window))
    with pytest.raises(ParamError) as raised:
        generation.start()
    assert raised.value.code == "prompt_too_long" and raised.value.param == "max_tokens"


def test_n_samples_run_as_one_batch_each_seeded_seed_plus_i(real_runtime):
    def request(n, seed):
        return GenerationRequest(
            "My favourite animal is", sampling=SamplingParams(temperature=1.0, seed=seed),
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
    import numpy as np
    from inference.beam import log_softmax

    finished = list(run(real_runtime, beam_request(2, max_tokens=6)))[-1]
    best = finished.beams[0]
    state = real_runtime.decoder.new_state()
    logits = state.append_tokens(real_runtime.codec.encode("The capital of France is", "completion"))
    total = 0.0
    for token in best.token_ids:
        total += float(log_softmax(logits)[0, token])
        logits = state.append_tokens([token])
    assert total == pytest.approx(best.cum_logprob, abs=1e-4)


def test_beam_steps_describe_a_tree(real_runtime):
    from inference.beam import BeamStep

    steps = [i for i in run(real_runtime, beam_request(4, max_tokens=5)) if isinstance(i, BeamStep)]
    assert steps[0].kept and all(p.parent == 0 for p in steps[0].kept)  # one root beam
    for step in steps:
        assert len(step.kept) <= 4
        assert len(step.kept) + len(step.pruned) + len(step.finished) == 8  # 2 × num_beams considered
        ranked = [p.cum_logprob for p in step.kept]
        assert ranked == sorted(ranked, reverse=True)
        assert all(p.cum_logprob <= step.kept[-1].cum_logprob for p in step.pruned if p.token_id not in real_runtime.codec.eos_ids)


def test_a_branch_on_the_same_path_replays_the_parent_exactly(real_runtime):
    """Forced tokens take their draws, so continuing a run from its own prefix reproduces it."""
    params = SamplingParams(temperature=1.0, top_p=0.95, seed=99)
    parent = collect(real_runtime, GenerationRequest("Once upon a time", sampling=params, loop=LoopParams(max_tokens=12)))[1]
    ids = [s.token_id for s in parent]
    branch = collect(real_runtime, GenerationRequest(
        "Once upon a time", sampling=params, loop=LoopParams(max_tokens=6), prefix_tokens=tuple(ids[:6]),
    ))[1]
    assert [s.token_id for s in branch] == ids
    assert [s.forced for s in branch] == [True] * 6 + [False] * 6
    for ours, theirs in zip(branch, parent):
        assert ours.trace.draw == theirs.trace.draw
        assert ours.trace.raw_prob == pytest.approx(theirs.trace.raw_prob, rel=1e-4)


def test_a_branch_through_an_alternative_traces_it_at_its_real_position(real_runtime):
    params = SamplingParams(temperature=0.0)
    parent = collect(real_runtime, GenerationRequest("The capital of France is", sampling=params, loop=LoopParams(max_tokens=4), top_n=5))[1]
    alternative = parent[1].trace.alternatives[2]
    branch = collect(real_runtime, GenerationRequest(
        "The capital of France is", sampling=params, loop=LoopParams(max_tokens=3),
        prefix_tokens=(parent[0].token_id, alternative.id),
    ))[1]
    assert branch[1].token_id == alternative.id and branch[1].forced
    assert branch[1].trace.raw_prob == pytest.approx(alternative.raw_prob, rel=1e-4)
    assert branch[1].trace.chosen.removed_by == "temperature"  # greedy would not have picked it
    assert len(branch) == 2 + 3 and not branch[2].forced
