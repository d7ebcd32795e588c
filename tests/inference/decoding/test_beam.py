"""Beam search on the tiny random model: the tree it reports, its scores and its ranking, each
checked against log-probabilities recomputed here from fresh one-row decoder states.

From the empty document (the prompt is only ``<|endoftext|>``) the tiny model's most likely next
token is ``<|endoftext|>`` itself, an end-of-sequence token: a one-token hypothesis finishes at
the first step while the other beams run on, so ``length_penalty`` decides the ranking.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from inference.decoding.beam import BeamSearch
from inference.decoding.generation import GenerationRequest, TokenStep, run
from inference.decoding.loop_params import LoopParams
from inference.errors import ParamError
from inference.sampling import SamplingParams
from tests.inference.helpers import collect, collect_beams, log_softmax, logits_along, rescore

PROMPT = "Once upon a time"
EMPTY = ""  # the prompt whose best next token is end-of-sequence


def beam_request(num_beams=3, max_tokens=6, length_penalty=1.0, prompt=PROMPT, **rest) -> GenerationRequest:
    loop = LoopParams(
        max_tokens=max_tokens, num_beams=num_beams, length_penalty=length_penalty, ignore_eos=rest.pop("ignore_eos", False)
    )
    return GenerationRequest(prompt, loop=loop, **rest)


def paths(steps) -> list[dict[str, list[tuple[tuple[int, ...], float]]]]:
    """Follows the parents through the steps: for each step, the full token path and cumulative
    log-probability of every kept, pruned and finished proposal."""
    beams: list[tuple[int, ...]] = [()]
    out = []
    for step in steps:
        named = {
            kind: [(beams[p.parent] + (p.token_id,), p.cum_logprob) for p in getattr(step, kind)]
            for kind in ("kept", "pruned", "finished")
        }
        out.append(named)
        beams = [path for path, _ in named["kept"]]
    return out


def candidates(steps, max_tokens) -> list[tuple[tuple[int, ...], str]]:
    """Every hypothesis the search could return: each finished proposal, and the live beams when
    the search ran to ``max_tokens``."""
    walked = paths(steps)
    found = [(path, "eos") for step in walked for path, _ in step["finished"]]
    if len(steps) == max_tokens:
        found += [(path, "max_tokens") for path, _ in walked[-1]["kept"]]
    return found


def test_the_steps_describe_a_tree_whose_scores_are_the_models(tiny_runtime):
    started, steps, finished = collect_beams(tiny_runtime, beam_request(num_beams=4, max_tokens=5))
    assert steps[0].kept and all(p.parent == 0 for p in steps[0].kept)  # one root beam
    assert [s.index for s in steps] == list(range(len(steps)))
    previous = 1
    for step in steps:
        assert len(step.kept) <= 4
        assert len(step.kept) + len(step.pruned) + len(step.finished) == 8  # 2 × num_beams considered
        assert all(0 <= p.parent < previous for p in step.kept + step.pruned + step.finished)
        ranked = [p.cum_logprob for p in step.kept]
        assert ranked == sorted(ranked, reverse=True)
        assert all(
            p.cum_logprob <= step.kept[-1].cum_logprob for p in step.pruned if p.token_id not in tiny_runtime.codec.eos_ids
        )
        previous = len(step.kept)
    # every proposal's log-probabilities are the model's for its whole path (the cache followed its beam)
    for step in paths(steps):
        for path, cum in step["kept"] + step["pruned"]:
            assert cum == pytest.approx(rescore(tiny_runtime, started.prompt_ids, path), abs=1e-4)
    for step, walked in zip(steps, paths(steps)):
        for proposal, (path, _) in zip(step.kept, walked["kept"]):
            last = logits_along(tiny_runtime, started.prompt_ids, path[:-1])[-1]
            assert proposal.logprob == pytest.approx(log_softmax(last)[proposal.token_id], abs=1e-5)


@pytest.mark.parametrize("use_cache", [True, False])
def test_every_hypothesis_is_a_path_of_the_tree_with_the_models_score(tiny_runtime, use_cache):
    started, steps, finished = collect_beams(tiny_runtime, beam_request(num_beams=3, max_tokens=6, use_cache=use_cache))
    assert len(finished.beams) == 3 and len(steps) == 6
    final = [path for path, _ in paths(steps)[-1]["kept"]]
    for h in finished.beams:
        assert h.token_ids in final and h.reason == "max_tokens" and len(h.token_ids) == 6
        cum = rescore(tiny_runtime, started.prompt_ids, h.token_ids)
        assert h.cum_logprob == pytest.approx(cum, abs=1e-4)
        assert h.score == pytest.approx(cum / 6, abs=1e-4)


def test_cached_and_uncached_searches_agree(tiny_runtime):
    cached = collect_beams(tiny_runtime, beam_request(num_beams=3, prompt=EMPTY))[1]
    plain = collect_beams(tiny_runtime, beam_request(num_beams=3, prompt=EMPTY, use_cache=False))[1]
    assert len(cached) == len(plain)
    for ours, theirs in zip(cached, plain):
        for kind in ("kept", "pruned", "finished"):
            mine, other = getattr(ours, kind), getattr(theirs, kind)
            assert [(p.parent, p.token_id) for p in mine] == [(p.parent, p.token_id) for p in other]
            np.testing.assert_allclose([p.cum_logprob for p in mine], [p.cum_logprob for p in other], atol=1e-4)


@pytest.mark.parametrize("length_penalty", [-2.0, 0.0, 1.0, 3.0])
def test_the_ranking_follows_the_length_penalized_score(tiny_runtime, length_penalty):
    max_tokens = 6
    started, steps, finished = collect_beams(
        tiny_runtime, beam_request(num_beams=3, max_tokens=max_tokens, length_penalty=length_penalty, prompt=EMPTY)
    )
    found = candidates(steps, max_tokens)
    assert any(reason == "eos" for _, reason in found), "the empty document should finish a beam on end-of-sequence"

    def score(path):  # cumulative log-probability / length ** length_penalty, recomputed here
        return rescore(tiny_runtime, started.prompt_ids, path) / len(path) ** length_penalty

    expected = sorted(found, key=lambda c: (-score(c[0]), c[0]))[:3]
    assert [(h.token_ids, h.reason) for h in finished.beams] == expected
    for h in finished.beams:
        assert h.score == pytest.approx(score(h.token_ids), abs=1e-4)
        assert h.cum_logprob == pytest.approx(rescore(tiny_runtime, started.prompt_ids, h.token_ids), abs=1e-4)
    scores = [h.score for h in finished.beams]
    assert scores == sorted(scores, reverse=True)


def test_length_penalty_decides_between_a_short_and_a_long_hypothesis(tiny_runtime):
    def best(length_penalty):
        return collect_beams(tiny_runtime, beam_request(length_penalty=length_penalty, prompt=EMPTY))[2].beams[0]

    eos = tiny_runtime.codec.token_id("<|endoftext|>")
    assert best(0.0).token_ids == (eos,) and best(0.0).reason == "eos"  # raw log-probability: the short one
    assert len(best(1.0).token_ids) == 6 and best(1.0).reason == "max_tokens"  # per token: the long one


def test_finished_hypotheses_end_on_end_of_sequence_and_report_text_without_it(tiny_runtime):
    _, _, finished = collect_beams(tiny_runtime, beam_request(length_penalty=-2.0, prompt=EMPTY))
    codec = tiny_runtime.codec
    ended = [h for h in finished.beams if h.reason == "eos"]
    assert ended and all(h.token_ids[-1] in codec.eos_ids for h in ended)
    assert [s.token_ids for s in finished.samples] == [h.token_ids for h in finished.beams]
    for sample, h in zip(finished.samples, finished.beams):
        assert sample.reason == h.reason and sample.completion_tokens == len(h.token_ids)
        assert sample.text == codec.decode([t for t in h.token_ids if t not in codec.eos_ids])
    assert finished.text == finished.samples[0].text


def test_ignore_eos_keeps_end_of_sequence_as_an_ordinary_token(tiny_runtime):
    _, steps, finished = collect_beams(tiny_runtime, beam_request(prompt=EMPTY, ignore_eos=True))
    eos = tiny_runtime.codec.token_id("<|endoftext|>")
    assert all(not step.finished for step in steps)
    assert steps[0].kept[0].token_id == eos  # it would have finished a beam otherwise
    assert all(h.reason == "max_tokens" and len(h.token_ids) == 6 for h in finished.beams)


def test_the_first_step_ranks_the_tokens_the_way_greedy_sees_them(tiny_runtime):
    """Beam search's best first token is greedy's, with the log of the probability greedy reports."""
    greedy = GenerationRequest(PROMPT, sampling=SamplingParams(temperature=0.0), loop=LoopParams(max_tokens=1), top_n=5)
    first = collect(tiny_runtime, greedy)[1][0]
    step = collect_beams(tiny_runtime, beam_request(num_beams=2))[1][0]
    assert step.kept[0].token_id == first.token_id
    assert step.kept[0].logprob == pytest.approx(math.log(first.trace.raw_prob), abs=1e-6)
    top = [a.id for a in first.trace.alternatives[:4]]
    assert [p.token_id for p in step.kept + step.pruned] == top  # the 2 × 2 most likely, in order


def test_num_beams_1_runs_the_sampling_loop_and_beam_search_needs_two(tiny_runtime):
    request = GenerationRequest(PROMPT, sampling=SamplingParams(temperature=0.0), loop=LoopParams(max_tokens=3, num_beams=1))
    items = list(run(tiny_runtime, request))
    assert all(isinstance(i, TokenStep) for i in items[1:-1]) and len(items) == 5
    assert items[-1].beams == ()
    with pytest.raises(ValueError, match="at least 2"):
        BeamSearch(num_beams=1, length_penalty=1.0, max_tokens=3)


def test_beam_search_is_deterministic(tiny_runtime):
    first = collect_beams(tiny_runtime, beam_request(prompt=EMPTY, length_penalty=0.0))
    again = collect_beams(tiny_runtime, beam_request(prompt=EMPTY, length_penalty=0.0))
    assert first[2].beams == again[2].beams
    assert [(s.kept, s.pruned, s.finished) for s in first[1]] == [(s.kept, s.pruned, s.finished) for s in again[1]]


def test_a_cancel_ends_the_search_with_the_live_beams(tiny_runtime):
    seen = []

    def cancelled():
        return len(seen) >= 3  # Started and two steps

    for item in run(tiny_runtime, beam_request(num_beams=3, max_tokens=10), cancelled):
        seen.append(item)
    steps, finished = seen[1:-1], seen[-1]
    assert len(steps) == 2
    live = [path for path, _ in paths(steps)[-1]["kept"]]
    assert sorted(h.token_ids for h in finished.beams) == sorted(live)
    assert all(h.reason == "cancelled" and len(h.token_ids) == 2 for h in finished.beams)
    assert all(s.reason == "cancelled" for s in finished.samples)


def test_a_prefix_is_context_and_not_part_of_the_hypotheses(tiny_runtime):
    prefix = tuple(tiny_runtime.codec.encode(" there was", "plain"))
    started, _, finished = collect_beams(tiny_runtime, beam_request(num_beams=2, max_tokens=4, prefix_tokens=prefix))
    assert started.prompt_ids == tiny_runtime.codec.encode(PROMPT, "completion")
    for h in finished.beams:
        assert len(h.token_ids) == 4
        assert h.cum_logprob == pytest.approx(rescore(tiny_runtime, started.prompt_ids + list(prefix), h.token_ids), abs=1e-4)


def test_a_search_that_cannot_fit_is_refused_naming_the_field(tiny_runtime):
    window = tiny_runtime.shape.context_window
    with pytest.raises(ParamError) as raised:
        collect_beams(tiny_runtime, beam_request(max_tokens=window))
    assert raised.value.param == "max_tokens" and raised.value.code == "prompt_too_long"


@pytest.mark.parametrize("num_beams", [1, 2])
def test_a_logit_bias_key_beyond_the_vocabulary_is_refused_by_sampling_and_beam_search_alike(tiny_runtime, num_beams):
    for token in (tiny_runtime.shape.vocab_size, 10**30):
        bias = SamplingParams(logit_bias={token: 1.0})
        with pytest.raises(ParamError) as raised:
            collect(tiny_runtime, beam_request(num_beams=num_beams, sampling=bias))
        assert raised.value.param == f"logit_bias.{token}"
