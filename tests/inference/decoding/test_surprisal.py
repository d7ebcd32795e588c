"""Prompt surprisal read off the prefill (``inference.decoding.surprisal``) equals a separate forward pass's
scores (``inference.decoding.scoring.score_prompt``), solo and batched, chunked or not, on the tiny model
and the real one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from inference.batching.scheduler import Scheduler
from inference.decoding import surprisal
from inference.decoding.generation import GenerationRequest, Started
from inference.decoding.loop_params import LoopParams
from inference.decoding.scoring import score_prompt
from inference.decoding.surprisal import PromptSurprisal, SurprisalCollector
from inference.prefill import prefill
from inference.sampling import SamplingParams
from tests.inference.batching.test_scheduler import Listener, drain, submit_all
from tests.inference.helpers import collect, collect_beams, log_softmax

# The prefill computes a chunk's positions in one call, score_prompt in chunks of its own size: the
# same logits up to float32 rounding (measured below 1e-5 on the tiny model, ~1e-3 on the 4-bit real one).
TINY_TOLERANCE = 1e-4
REAL_TOLERANCE = 5e-3
LONG_PROMPT = "the quick brown fox jumps over the lazy dog " * 6  # > 16 tokens: several chunks below


def scored(prompt: str, top_n: int = 4, use_cache: bool = True) -> GenerationRequest:
    return GenerationRequest(
        prompt,
        sampling=SamplingParams(temperature=0.0),
        loop=LoopParams(max_tokens=2),
        top_n=top_n,
        use_cache=use_cache,
        prompt_scores=True,
    )


def assert_matches_separate_pass(runtime, ids: list[int], record: PromptSurprisal, top_n: int, tolerance: float) -> None:
    reference = score_prompt(runtime, ids, top_n)
    assert [t.token_id for t in record.tokens] == ids
    first = record.tokens[0]
    assert (first.logprob, first.rank, first.entropy, first.top) == (None, None, None, ())
    for mine, theirs in zip(record.tokens[1:], reference[1:]):
        assert mine.logprob == pytest.approx(theirs.logprob, abs=tolerance)
        assert (mine.rank, mine.entropy) == (theirs.rank, pytest.approx(theirs.entropy, abs=tolerance * 10))
        assert [p for _, p in mine.top] == pytest.approx([p for _, p in theirs.top], abs=tolerance)
    bits = -sum(t.logprob for t in reference[1:]) / math.log(2)
    assert record.total_bits == pytest.approx(bits, abs=tolerance * len(ids))
    assert record.perplexity == pytest.approx(2 ** (bits / (len(ids) - 1)), rel=tolerance * 10)


def test_a_solo_run_reports_its_prompt_as_a_separate_pass_scores_it(tiny_runtime):
    started, _, _ = collect(tiny_runtime, scored(LONG_PROMPT))
    assert started.prompt_surprisal is not None
    assert_matches_separate_pass(tiny_runtime, started.prompt_ids, started.prompt_surprisal, 4, TINY_TOLERANCE)


def test_rank_entropy_and_alternatives_are_those_of_the_distribution_before_each_token(tiny_runtime):
    started, _, _ = collect(tiny_runtime, scored("Once upon a time there was", top_n=3))
    ids = started.prompt_ids
    every = tiny_runtime.decoder.new_state().append_tokens(ids, all_logits=True)[0]  # [S, V]
    for position, token in enumerate(started.prompt_surprisal.tokens[1:], start=1):
        row = log_softmax(every[position - 1])
        order = sorted(range(row.shape[0]), key=lambda i: (-row[i], i))
        assert token.rank == order.index(ids[position]) + 1
        assert [i for i, _ in token.top] == order[:3]
        assert token.entropy == pytest.approx(float(-(np.exp(row) * row).sum()), abs=TINY_TOLERANCE)
        assert token.prob == pytest.approx(math.exp(row[ids[position]]), abs=TINY_TOLERANCE)


def test_a_chunked_prefill_gives_the_scores_of_one_pass(tiny_runtime, monkeypatch):
    monkeypatch.setattr(surprisal, "SCORE_BLOCK", 7)  # several blocks within a chunk, too
    ids = tiny_runtime.codec.encode(LONG_PROMPT, "completion")
    whole, chunked = SurprisalCollector(ids, 2), SurprisalCollector(ids, 2)
    prefill(tiny_runtime.decoder.new_state(), ids, surprisal=whole)
    prefill(tiny_runtime.decoder.new_state(), ids, chunk=5, surprisal=chunked)
    for a, b in zip(whole.result().tokens, chunked.result().tokens):
        assert a.token_id == b.token_id and a.rank == b.rank
        assert (a.logprob is None) == (b.logprob is None)
        if a.logprob is not None:
            assert a.logprob == pytest.approx(b.logprob, abs=TINY_TOLERANCE)


def test_a_run_that_does_not_ask_keeps_no_logits(tiny_runtime):
    started, _, _ = collect(tiny_runtime, GenerationRequest("hello there", loop=LoopParams(max_tokens=1)))
    assert started.prompt_surprisal is None


@pytest.mark.parametrize(
    ("chunk", "use_cache"),
    [(512, True), (16, True), (16, False)],
    ids=["fresh-group", "chunked-on-a-slot", "solo-state"],
)
def test_batched_runs_report_what_they_report_alone(tiny_runtime, chunk, use_cache):
    scheduler = Scheduler(tiny_runtime, max_batch=4, prefill_chunk=chunk, full_prefill_chunk=chunk)
    prompts = ["Once upon a time", "hello there, how are", LONG_PROMPT]
    listeners = [Listener(scored(p, use_cache=use_cache)) for p in prompts]
    listeners.append(Listener(GenerationRequest("a run beside them", loop=LoopParams(max_tokens=2))))
    submit_all(scheduler, listeners)
    drain(scheduler, listeners)
    for listener in listeners[:3]:
        assert listener.error is None
        started = next(item for item in listener.items if isinstance(item, Started))
        alone, _, _ = collect(tiny_runtime, listener.request)
        assert [t.token_id for t in started.prompt_surprisal.tokens] == alone.prompt_ids
        for a, b in zip(started.prompt_surprisal.tokens[1:], alone.prompt_surprisal.tokens[1:]):
            assert a.logprob == pytest.approx(b.logprob, abs=TINY_TOLERANCE)
            assert [i for i, _ in a.top] == [i for i, _ in b.top]
    beside = next(item for item in listeners[3].items if isinstance(item, Started))
    assert beside.prompt_surprisal is None


def test_a_beam_run_scores_its_prompt_and_not_its_forced_prefix(tiny_runtime):
    request = GenerationRequest(
        "Once upon a time",
        loop=LoopParams(max_tokens=3, num_beams=2),
        prefix_tokens=(5, 6, 7),
        prompt_scores=True,
    )
    started, _, _ = collect_beams(tiny_runtime, request)
    assert [t.token_id for t in started.prompt_surprisal.tokens] == started.prompt_ids


@pytest.mark.real_model
def test_the_real_model_reports_what_a_separate_pass_scores(real_runtime):
    started, _, _ = collect(real_runtime, scored("The capital of France is Paris, and the capital of Italy is Rome."))
    assert_matches_separate_pass(real_runtime, started.prompt_ids, started.prompt_surprisal, 4, REAL_TOLERANCE)
    paris = real_runtime.codec.encode(" Rome", "plain")[0]
    rome = [t for t in started.prompt_surprisal.tokens if t.token_id == paris][-1]
    assert rome.rank == 1  # the model expects it
