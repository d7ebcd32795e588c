"""Continuous batching on the tiny Gemma, whose sliding layers' buffers stop at 16 positions (window
8): runs of different lengths shift their rows at different steps, slots are taken anew, a long
prompt prefills in chunks, beams reorder shifted rows, and each run gives what it gives alone
(``tests/inference/test_engine_sliding.py`` checks alone against a cache holding every position)."""

from __future__ import annotations

from inference.batching.scheduler import Scheduler
from inference.decoding.generation import GenerationRequest, TokenStep, Verification, run
from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.sampling import SamplingParams
from tests.inference.batching.test_scheduler import Listener, assert_same_as_alone, drain, request, submit_all
from tests.inference.helpers import collect_beams


def test_runs_of_different_lengths_each_give_their_solo_result(tiny_gemma_runtime):
    scheduler = Scheduler(tiny_gemma_runtime, max_batch=8)
    listeners = [
        Listener(request("Once upon a time", max_tokens=40)),
        Listener(request("The capital of France is", temperature=0.9, top_k=20, seed=7, max_tokens=33)),
        Listener(request("A", temperature=1.0, top_k=20, seed=3, n=3, max_tokens=29)),
    ]
    submit_all(scheduler, listeners)
    drain(scheduler, listeners)
    for listener in listeners:
        assert listener.error is None
        assert_same_as_alone(tiny_gemma_runtime, listener)
    assert (scheduler.runner.cache.sliding_capacity, scheduler.runner.cache.offsets.max() > 0) == (16, True)


def test_slots_taken_anew_and_runs_joining_mid_stream(tiny_gemma_runtime):
    scheduler = Scheduler(tiny_gemma_runtime, max_batch=2)
    first = [Listener(request("Once upon a time", max_tokens=30)), Listener(request("Hi", max_tokens=20))]
    late = [Listener(request(f"Story number {i}:", temperature=1.0, top_k=20, seed=i, max_tokens=12 + i)) for i in range(3)]
    submit_all(scheduler, first)
    drain(scheduler, first, joining={3: late})
    for listener in first + late:
        assert_same_as_alone(tiny_gemma_runtime, listener)


def test_a_long_prompt_prefills_in_chunks_past_the_window(tiny_gemma_runtime):
    scheduler = Scheduler(tiny_gemma_runtime, max_batch=4, prefill_chunk=6)
    streaming = Listener(request("Once upon a time", max_tokens=30))
    long_prompt = Listener(request("the capital of it is " * 5, max_tokens=12))
    submit_all(scheduler, [streaming])
    drain(scheduler, [streaming, long_prompt], joining={2: [long_prompt]})
    assert_same_as_alone(tiny_gemma_runtime, streaming)
    assert_same_as_alone(tiny_gemma_runtime, long_prompt)


def test_beams_reorder_shifted_rows(tiny_gemma_runtime):
    scheduler = Scheduler(tiny_gemma_runtime, max_batch=6)
    beams = Listener(request("The capital of France is", num_beams=3, max_tokens=20, length_penalty=1.0))
    other = Listener(request("Why", max_tokens=25))
    submit_all(scheduler, [beams, other])
    drain(scheduler, [beams, other])
    _, alone_steps, alone = collect_beams(tiny_gemma_runtime, beams.request)
    assert [h.token_ids for h in beams.items[-1].beams] == [h.token_ids for h in alone.beams]
    assert_same_as_alone(tiny_gemma_runtime, other)


def test_speculative_runs_roll_back_shifted_rows(tiny_gemma_runtime):
    """Prompt lookup drafts up to 8 tokens on a repetitive prompt; its verify steps shift the row
    and rejected drafts roll it back by length, batched and solo: the greedy tokens of the plain run."""

    def greedy(speculative: SpeculativeParams | None) -> GenerationRequest:
        loop = LoopParams(max_tokens=40, ignore_eos=True)
        text = "the cat is the cat is the cat is the"
        return GenerationRequest(text, sampling=SamplingParams(temperature=0.0), loop=loop, speculative=speculative)

    plain = [i.token_id for i in run(tiny_gemma_runtime, greedy(None)) if isinstance(i, TokenStep)]
    solo = list(run(tiny_gemma_runtime, greedy(SpeculativeParams(k=8))))
    scheduler = Scheduler(tiny_gemma_runtime, max_batch=4)
    batched, neighbour = Listener(greedy(SpeculativeParams(k=8))), Listener(request("Once upon a time", max_tokens=45))
    submit_all(scheduler, [neighbour, batched])
    drain(scheduler, [neighbour, batched])
    for items in (solo, batched.items):
        assert [i.token_id for i in items if isinstance(i, TokenStep)] == plain
        verifications = [i for i in items if isinstance(i, Verification)]
        assert any(v.accepted < len(v.drafted) for v in verifications)  # some drafts were rejected: rollbacks happened
    assert_same_as_alone(tiny_gemma_runtime, neighbour)
