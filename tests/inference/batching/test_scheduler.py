"""Continuous batching on the tiny model: rows of different lengths in one decoder call, and the
scheduler's runs joining, leaving and being cancelled, each giving what it gives alone."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np
import pytest

from inference.batching.scheduler import BatchStep, Scheduler, Slots, Ticket, serve_in_thread
from inference.decoding.beam import BeamStep
from inference.decoding.generation import Finished, GenerationRequest, Started, TokenStep
from inference.decoding.loop_params import LoopParams
from inference.errors import Cancelled, ParamError
from inference.sampling import SamplingParams
from tests.inference.helpers import collect, collect_beams

LOGIT_ROUNDING = 1e-5  # measured: a row's logits in a batch vs alone differ by at most ~3e-7 on the tiny model


def request(prompt="Once upon a time", *, temperature=0.0, seed=None, top_k=0, use_cache=True, **loop) -> GenerationRequest:
    loop.setdefault("max_tokens", 8)
    return GenerationRequest(
        prompt,
        sampling=SamplingParams(temperature=temperature, seed=seed, top_k=top_k),
        loop=LoopParams(**loop),
        use_cache=use_cache,
    )


@dataclass
class Listener:
    """One ticket's results as the scheduler delivers them."""

    request: GenerationRequest
    cancel_after: int | None = None  # raise the cancel flag after this many token events
    items: list = field(default_factory=list)
    infos: list = field(default_factory=list)
    error: BaseException | None = None

    def ticket(self) -> Ticket:
        return Ticket(self.request, self.is_cancelled, self.deliver, self.fail)

    def is_cancelled(self) -> bool:
        return self.cancel_after is not None and len(self.steps) >= self.cancel_after

    def deliver(self, item, info) -> None:
        self.items.append(item)
        self.infos.append(info)

    def fail(self, error: BaseException) -> None:
        self.error = error

    @property
    def steps(self) -> list:
        return [item for item in self.items if isinstance(item, TokenStep | BeamStep)]

    @property
    def done(self) -> bool:
        return self.error is not None or bool(self.items) and isinstance(self.items[-1], Finished)


def drain(scheduler: Scheduler, listeners: list[Listener], joining: dict[int, list[Listener]] | None = None) -> int:
    """Steps until every listener has ended; ``joining[k]`` are submitted before iteration k."""
    joining = joining or {}
    iterations = 0
    everyone = listeners + [late for group in joining.values() for late in group]
    while not all(listener.done for listener in everyone):
        for late in joining.get(iterations, []):
            scheduler.submit(late.ticket())
        scheduler.step()
        iterations += 1
        assert iterations < 2000, "the scheduler stopped making progress"
    return iterations


def submit_all(scheduler: Scheduler, listeners: list[Listener]) -> None:
    for listener in listeners:
        scheduler.submit(listener.ticket())


def token_ids(items) -> list[tuple[int, int]]:
    return [(item.sample, item.token_id) for item in items if isinstance(item, TokenStep)]


def assert_same_as_alone(runtime, listener: Listener, tolerance: float = LOGIT_ROUNDING) -> None:
    """Tokens (and draws) identical to the run alone; raw probabilities within the rounding."""
    _, alone_steps, alone = collect(runtime, listener.request)
    steps = [item for item in listener.items if isinstance(item, TokenStep)]
    assert token_ids(steps) == token_ids(alone_steps)
    assert [s.trace.draw for s in steps] == [s.trace.draw for s in alone_steps]
    batched_probs = np.array([s.trace.chosen.raw_prob for s in steps])
    alone_probs = np.array([s.trace.chosen.raw_prob for s in alone_steps])
    np.testing.assert_allclose(batched_probs, alone_probs, rtol=0, atol=tolerance)
    finished = listener.items[-1]
    assert isinstance(finished, Finished)
    assert [(s.reason, s.text, s.token_ids) for s in finished.samples] == [(s.reason, s.text, s.token_ids) for s in alone.samples]


# -- the engine: rows of different lengths in one call ---------------------------------------------


def test_rows_of_different_lengths_in_one_call_give_each_rows_logits_alone(tiny_runtime):
    decoder = tiny_runtime.decoder
    prompts = [[0, 504, 3575, 282], [0, 504, 3575, 282, 4649, 314, 33, 44, 55], [7, 8]]
    alone = []
    for prompt in prompts:  # each sequence decoded alone, greedily, for 4 steps
        state = decoder.new_state()
        logits, seen = state.append_tokens(prompt)[0], []
        for _ in range(4):
            seen.append(logits)
            logits = state.append_tokens([int(np.argmax(logits))])[0]
        seen.append(logits)
        alone.append(seen)
    cache = decoder.empty_past(len(prompts) + 1)  # a spare row the calls never touch
    lengths = np.zeros(len(prompts), dtype=np.int64)
    logits = []
    for row, prompt in enumerate(prompts):  # each prompt prefilled on its own row only
        logits.append(decoder.run_rows(np.array([prompt]), cache, np.array([0]), row)[0])
        lengths[row] = len(prompt)
    worst = 0.0
    for step in range(5):
        worst = max(worst, *(float(np.abs(logits[r] - alone[r][step]).max()) for r in range(len(prompts))))
        if step == 4:
            break
        tokens = np.array([[int(np.argmax(row))] for row in logits])
        logits = list(decoder.run_rows(tokens, cache, lengths, 0))
        lengths += 1
    assert worst < LOGIT_ROUNDING, worst
    assert not cache.buffers[0][len(prompts)].any()  # the spare row was never written


def test_fresh_prompts_prefilled_together_give_each_prompts_logits_and_cache_alone(tiny_runtime):
    decoder = tiny_runtime.decoder
    prompts = [[0, 504, 3575, 282, 4649, 314], [7, 8], [0, 504, 3575, 282, 4649, 314, 33, 44, 55]]
    cache = decoder.empty_past(5)
    for buffer in cache.buffers:
        buffer[2] = 0.5  # a row holding someone else's cache, between the targets
    targets = [3, 0, 4]
    logits = decoder.prefill_fresh_rows(prompts, cache, targets)  # [3, V]
    assert logits.shape == (3, tiny_runtime.shape.vocab_size)
    for row, (prompt, target) in enumerate(zip(prompts, targets)):
        state = decoder.new_state()
        alone = state.append_tokens(prompt)[0]
        np.testing.assert_array_equal(logits[row], alone)  # the one-pass prefill's logits, bit for bit
        token = int(np.argmax(alone))
        after = decoder.run_rows(np.array([[token]]), cache, np.array([len(prompt)]), target)[0]
        assert float(np.abs(after - state.append_tokens([token])[0]).max()) < LOGIT_ROUNDING  # its cache was copied
    assert all((buffer[2] == 0.5).all() for buffer in cache.buffers)  # the row in between is untouched
    assert not cache.buffers[0][1].any()  # and the spare row never written


# -- the scheduler ---------------------------------------------------------------------------------


def test_mixed_runs_in_one_batch_each_give_their_solo_result(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=8)
    listeners = [
        Listener(request("Once upon a time", max_tokens=12)),
        Listener(request("The capital of France is", temperature=0.9, top_k=20, seed=7, max_tokens=10)),
        Listener(request("A", temperature=1.0, top_k=20, seed=3, n=3, max_tokens=9)),
        Listener(request("Tell me a story about a dragon and a knight", temperature=0.7, top_k=20, seed=11, stop=("e",))),
    ]
    submit_all(scheduler, listeners)
    drain(scheduler, listeners)
    for listener in listeners:
        assert listener.error is None
        assert_same_as_alone(tiny_runtime, listener)
    infos = [info for listener in listeners for info in listener.infos if isinstance(info, BatchStep)]
    assert max(info.requests for info in infos) == 4 and max(info.rows for info in infos) == 6  # 1 + 1 + 3 + 1
    started = [info for listener in listeners for info in listener.infos if isinstance(info, Slots)]
    assert sorted(slot for info in started for slot in info.slots) == list(range(6))  # each row its own slot


def test_a_burst_of_fresh_prompts_starts_in_one_decoder_call(tiny_runtime, monkeypatch):
    scheduler = Scheduler(tiny_runtime, max_batch=8)
    groups: list[list[int]] = []
    real = tiny_runtime.decoder.prefill_fresh_rows

    def counted(prompts, into, targets, all_logits=False):
        groups.append([len(prompt) for prompt in prompts])
        return real(prompts, into, targets, all_logits)

    monkeypatch.setattr(tiny_runtime.decoder, "prefill_fresh_rows", counted)
    listeners = [
        Listener(request("Once upon a time", max_tokens=6)),
        Listener(request("The capital of France is", temperature=0.9, top_k=20, seed=7, max_tokens=5)),
        Listener(request("A dragon", temperature=1.0, top_k=20, seed=3, n=2, max_tokens=4)),
        Listener(dataclasses.replace(request("A", max_tokens=3), mode="plain")),  # one token: alone (MIN_GROUP_PROMPT)
    ]
    submit_all(scheduler, listeners)
    scheduler.step()
    assert len(groups) == 1 and len(groups[0]) == 3  # the first three in one call, the fourth after them
    assert all(isinstance(listener.items[0], Started) for listener in listeners)  # every one started in that step
    drain(scheduler, listeners)
    for listener in listeners:
        assert_same_as_alone(tiny_runtime, listener)


def test_runs_joining_mid_stream_and_leaving_early_are_untouched_by_each_other(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=4)
    first = [Listener(request("Once upon a time", max_tokens=20)), Listener(request("Hi", max_tokens=3))]
    late = [
        Listener(request("The weather today", temperature=1.0, top_k=20, seed=5, max_tokens=6)),
        Listener(request("Numbers: 1, 2, 3,", max_tokens=10)),
    ]
    submit_all(scheduler, first)
    drain(scheduler, first, joining={4: late[:1], 9: late[1:]})
    for listener in first + late:
        assert_same_as_alone(tiny_runtime, listener)
    # the short run left early and a late one took its slot
    slots = {id(listener): next(i for i in listener.infos if isinstance(i, Slots)).slots for listener in first + late}
    assert slots[id(late[0])] == slots[id(first[1])]
    steps_of = [[info.step for info in listener.infos if isinstance(info, BatchStep)] for listener in first + late]
    shared = set(steps_of[0]) & set(steps_of[2]) & set(steps_of[3])
    assert shared, "the late runs decoded in the same steps as the first one"


def test_beams_take_several_rows_beside_sampling_runs(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=6)
    beams = Listener(request("The capital of France is", num_beams=3, max_tokens=6, length_penalty=1.0))
    others = [Listener(request("Once upon a time", max_tokens=10)), Listener(request("Why", max_tokens=7))]
    submit_all(scheduler, [beams, *others])
    drain(scheduler, [beams, *others])
    _, alone_steps, alone = collect_beams(tiny_runtime, beams.request)
    beam_steps = [item for item in beams.items if isinstance(item, BeamStep)]
    assert [[(p.parent, p.token_id) for p in s.kept] for s in beam_steps] == [
        [(p.parent, p.token_id) for p in s.kept] for s in alone_steps
    ]
    assert [h.token_ids for h in beams.items[-1].beams] == [h.token_ids for h in alone.beams]
    for listener in others:
        assert_same_as_alone(tiny_runtime, listener)


def test_more_runs_than_rows_wait_in_order_and_reuse_freed_slots(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=2)
    listeners = [Listener(request(f"Story number {i}:", max_tokens=4 + i)) for i in range(5)]
    submit_all(scheduler, listeners)
    scheduler.step()  # both slots taken, both short prompts prefilled in the step
    assert scheduler.load() == {"running": 2, "rows": 2, "waiting": 3, "max_batch": 2}
    drain(scheduler, listeners)
    for listener in listeners:
        assert_same_as_alone(tiny_runtime, listener)
        assert all(info.rows <= 2 for info in listener.infos if isinstance(info, BatchStep))
    started_at = [next(i for i, item in enumerate(listener.items) if isinstance(item, Started)) for listener in listeners]
    assert started_at == [0] * 5
    assert scheduler.load() == {"running": 0, "rows": 0, "waiting": 0, "max_batch": 2}


def test_a_cancel_ends_one_run_within_one_token_and_leaves_the_others_untouched(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=4)
    cancelled = Listener(request("Once upon a time", temperature=1.0, top_k=20, seed=9, max_tokens=30), cancel_after=3)
    others = [Listener(request("The capital of France is", max_tokens=12)), Listener(request("A", n=2, max_tokens=9))]
    submit_all(scheduler, [cancelled, *others])
    drain(scheduler, [cancelled, *others])
    finished = cancelled.items[-1]
    assert isinstance(finished, Finished) and finished.reason == "cancelled" and finished.completion_tokens == 3
    for listener in others:
        assert_same_as_alone(tiny_runtime, listener)


def test_a_cancel_before_the_prefill_ends_raises_cancelled_and_frees_the_slot(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=1)
    waiting = Listener(request("Never mind", max_tokens=5), cancel_after=0)
    running = Listener(request("Once upon a time", max_tokens=5))
    submit_all(scheduler, [running, waiting])
    drain(scheduler, [running, waiting])
    assert isinstance(waiting.error, Cancelled) and waiting.items == []
    assert_same_as_alone(tiny_runtime, running)


def test_a_long_prompt_prefills_in_chunks_while_the_others_keep_decoding(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=4, prefill_chunk=16)
    streaming = Listener(request("Once upon a time", max_tokens=40))
    long_prompt = Listener(request("word " * 150, max_tokens=4))  # about 150 tokens: ten chunks
    submit_all(scheduler, [streaming])
    drain(scheduler, [streaming], joining={2: [long_prompt]})
    started = next(info for info in long_prompt.infos if isinstance(info, Slots))
    assert started.slots == (1,)
    steps = [info.step for info in streaming.infos if isinstance(info, BatchStep)]
    first_long = next(info.step for info in long_prompt.infos if isinstance(info, BatchStep))
    during = [step for step in steps if step < first_long]
    assert len(during) >= 10, "the running stream took a token in every step of the long prefill"
    assert steps == list(range(steps[0], steps[0] + len(steps)))  # no step without its token
    assert_same_as_alone(tiny_runtime, streaming)
    assert_same_as_alone(tiny_runtime, long_prompt)


def test_a_run_without_kv_cache_runs_on_its_own_beside_the_batch(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=4)
    plain = Listener(request("Once upon a time", use_cache=False, max_tokens=6))
    cached = Listener(request("Once upon a time", max_tokens=6))
    submit_all(scheduler, [plain, cached])
    drain(scheduler, [plain, cached])
    assert token_ids(plain.items) == token_ids(cached.items)
    assert_same_as_alone(tiny_runtime, cached)


def test_a_bad_request_fails_alone(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=4)
    too_long = Listener(request("word " * 10, max_tokens=tiny_runtime.shape.context_window))
    fine = Listener(request("Once upon a time", max_tokens=5))
    submit_all(scheduler, [too_long, fine])
    drain(scheduler, [too_long, fine])
    assert too_long.error is not None and "context" in str(too_long.error)
    assert_same_as_alone(tiny_runtime, fine)


def test_more_samples_than_rows_is_refused_naming_the_field(tiny_runtime):
    scheduler = Scheduler(tiny_runtime, max_batch=2)
    wide = Listener(request("Hi", n=3))
    submit_all(scheduler, [wide])
    drain(scheduler, [wide])
    assert isinstance(wide.error, ParamError) and wide.error.param == "n" and "at most 2" in wide.error.message


@pytest.mark.parametrize("max_batch", [0, -1])
def test_max_batch_must_be_positive(tiny_runtime, max_batch):
    with pytest.raises(ValueError, match="max_batch"):
        Scheduler(tiny_runtime, max_batch=max_batch)


# -- the serving loop's admission window ---------------------------------------------------------


def serve_until_done(scheduler: Scheduler, listeners: list[Listener], between: float) -> None:
    """Serves on the scheduler's own thread; submits the listeners ``between`` seconds apart and
    waits until each has ended."""
    _, stop = serve_in_thread(scheduler, "test-decode")
    try:
        for index, listener in enumerate(listeners):
            if index:
                time.sleep(between)
            scheduler.submit(listener.ticket())
        deadline = time.monotonic() + 120
        while not all(listener.done for listener in listeners):
            assert time.monotonic() < deadline, "the serving loop stopped making progress"
            time.sleep(0.01)
    finally:
        stop.set()


def test_an_idle_loop_admits_a_burst_in_one_step(tiny_runtime):
    # a window far longer than the test: the first ticket waits for the second, however slow the machine
    scheduler = Scheduler(tiny_runtime, max_batch=2, admission_window=600.0)
    warm_up = [Listener(request("Hello there", max_tokens=2))]  # first decoder calls allocate: slow
    submit_all(scheduler, warm_up)
    drain(scheduler, warm_up)
    burst = [Listener(request("Once upon a time", max_tokens=3)), Listener(request("The capital of France", max_tokens=3))]
    serve_until_done(scheduler, burst, between=0.3)  # without the window, the first would have ended alone by then
    first_steps = [next(info for info in listener.infos if isinstance(info, BatchStep)) for listener in burst]
    assert first_steps[0] == first_steps[1] and first_steps[0].rows == 2  # one step took both first tokens
    for listener in burst:
        assert_same_as_alone(tiny_runtime, listener)


@pytest.mark.parametrize("window", [0.0, 0.05])
def test_a_lone_ticket_starts_once_nobody_follows(tiny_runtime, window):
    scheduler = Scheduler(tiny_runtime, max_batch=2, admission_window=window)
    alone = Listener(request("Once upon a time", max_tokens=3))
    serve_until_done(scheduler, [alone], between=0.0)  # nobody else comes: it does not wait for company for ever
    assert alone.error is None and len(alone.steps) == 3
    assert_same_as_alone(tiny_runtime, alone)


def test_the_admission_window_cannot_be_negative(tiny_runtime):
    with pytest.raises(ValueError, match="admission_window"):
        Scheduler(tiny_runtime, admission_window=-0.01)
