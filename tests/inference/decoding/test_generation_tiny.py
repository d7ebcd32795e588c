"""The generation loop's mechanics on the tiny random model (same tokenizer, same export as the real one).

The tiny model's text is gibberish, so where a test needs a known text it steers the model with
``logit_bias`` (a +100 bias makes greedy pick that token every step) or forces ``prefix_tokens``;
every expected value is worked out here from the decoder's own logits, never from the loop.
"""

from __future__ import annotations

import numpy as np
import pytest

from inference.decoding.generation import Finished, Generation, GenerationRequest, SoloDriver, Started, StepClock, TokenStep, run
from inference.decoding.loop_params import LoopParams
from inference.errors import Cancelled, ParamError
from inference.sampling import SamplingParams
from tests.inference.helpers import collect, recording, single_token, softmax

PROMPT = "Once upon a time"


def request(
    prompt=PROMPT, *, temperature=0.0, seed=None, logit_bias=None, top_k=0, top_n=5, use_cache=True, prefix_tokens=(), **loop
) -> GenerationRequest:
    loop.setdefault("max_tokens", 8)
    return GenerationRequest(
        prompt,
        sampling=SamplingParams(temperature=temperature, seed=seed, logit_bias=logit_bias or {}, top_k=top_k),
        loop=LoopParams(**loop),
        top_n=top_n,
        use_cache=use_cache,
        prefix_tokens=tuple(prefix_tokens),
    )


def ids(steps, sample=0) -> list[int]:
    return [s.token_id for s in steps if s.sample == sample]


def pieces(steps, finished, sample=0) -> str:
    return "".join(s.text for s in steps if s.sample == sample) + finished.samples[sample].tail


@pytest.fixture(scope="module")
def time_id(tiny_runtime) -> int:
    """ " time": with a +100 bias greedy picks it every step, so the text is " time time time…"."""
    return single_token(tiny_runtime, " time")


# -- start / step / is_done / finish ---------------------------------------------------------------


def test_a_completion_prompt_starts_a_fresh_document(tiny_runtime):
    started, _, _ = collect(tiny_runtime, request("The capital of France is", max_tokens=1))
    assert tiny_runtime.codec.decode(started.prompt_ids) == "<|endoftext|>The capital of France is"
    assert started.prompt_ids[0] == tiny_runtime.codec.token_id("<|endoftext|>")


def test_chat_mode_wraps_the_message_in_the_chat_template(tiny_runtime):
    started, _, _ = collect(tiny_runtime, GenerationRequest("Hi?", mode="chat", loop=LoopParams(max_tokens=1)))
    text = tiny_runtime.codec.decode(started.prompt_ids)
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n")


def test_the_lifecycle_refuses_steps_out_of_order(tiny_runtime):
    generation = Generation(tiny_runtime, request(max_tokens=2))
    driver = SoloDriver(tiny_runtime, generation)
    with pytest.raises(RuntimeError):
        driver.step()  # before start()
    driver.start()
    with pytest.raises(RuntimeError):
        generation.finish()  # before the end
    assert not generation.is_done()
    assert [len(driver.step()) for _ in range(2)] == [1, 1]
    assert generation.is_done()
    with pytest.raises(RuntimeError):
        driver.step()  # after the end
    assert generation.finish().reason == "max_tokens"


def test_greedy_takes_the_argmax_of_the_models_logits_every_step(tiny_runtime):
    runtime, decoder = recording(tiny_runtime)
    started, steps, finished = collect(runtime, request(max_tokens=6))
    (state,) = decoder.states
    assert state.calls[0].ids.tolist() == [started.prompt_ids]  # the prompt in one call
    assert [call.ids.tolist() for call in state.calls[1:]] == [[[s.token_id]] for s in steps[:-1]]
    for step, call in zip(steps, state.calls):
        logits = call.logits[0]
        assert step.token_id == int(np.argmax(logits))
        assert step.trace.draw is None and step.trace.greedy
        assert step.trace.raw_prob == pytest.approx(softmax(logits)[step.token_id], rel=1e-9)
    assert [s.index for s in steps] == list(range(6))
    assert finished.reason == "max_tokens" and finished.completion_tokens == 6 and finished.stop_string is None
    assert finished.text == tiny_runtime.codec.decode(ids(steps))
    assert finished.first.token_ids == tuple(ids(steps))


def test_a_sampled_token_is_the_inverse_cdf_pick_of_the_seeded_draw(tiny_runtime):
    """Sample i draws from numpy.random.default_rng(seed + i), one u per token, and takes the first
    token (by probability, ties to the lower id) whose cumulative probability exceeds u."""
    runtime, decoder = recording(tiny_runtime)
    _, steps, _ = collect(runtime, request(temperature=1.0, seed=4242, max_tokens=10))
    rng = np.random.default_rng(4242)
    for step, call in zip(steps, decoder.calls):
        u = rng.random()
        assert step.trace.draw == u
        p = softmax(call.logits[0])
        order = np.lexsort((np.arange(p.size), -p))
        expected = int(order[np.searchsorted(np.cumsum(p[order]), u, side="right")])
        assert step.token_id == expected


def test_max_tokens_ends_the_run_with_every_token_counted(tiny_runtime):
    _, steps, finished = collect(tiny_runtime, request(temperature=1.0, seed=3, max_tokens=5))
    assert len(steps) == 5 and finished.completion_tokens == 5 and finished.reason == "max_tokens"


# -- seeds -----------------------------------------------------------------------------------------


def test_same_seed_same_tokens_and_different_seed_differs(tiny_runtime):
    def run_with(seed):
        return collect(tiny_runtime, request(temperature=1.0, seed=seed, max_tokens=24))[1]

    first, again, other = run_with(1234), run_with(1234), run_with(4321)
    assert ids(first) == ids(again)
    assert [s.trace.draw for s in first] == [s.trace.draw for s in again]
    assert ids(first) != ids(other)


def test_a_seed_is_drawn_and_reported_when_none_is_given(tiny_runtime):
    started, steps, _ = collect(tiny_runtime, request(temperature=1.0, max_tokens=6))
    assert 0 <= started.seed < 2**62
    assert started.request.sampling.seed == started.seed
    replay = collect(tiny_runtime, request(temperature=1.0, seed=started.seed, max_tokens=6))[1]
    assert ids(replay) == ids(steps)
    assert collect(tiny_runtime, request(temperature=1.0, max_tokens=1))[0].seed != started.seed


# -- n samples as one batch ------------------------------------------------------------------------


def test_n_samples_each_reproduce_the_single_run_seeded_seed_plus_i(tiny_runtime):
    """With the end-of-sequence token made likely, samples end at different steps: an ended sample
    is fed a filler token and must not disturb the others."""
    eos = min(tiny_runtime.codec.eos_ids)
    common = dict(temperature=1.0, logit_bias={eos: 9.0}, max_tokens=12)
    runtime, decoder = recording(tiny_runtime)
    _, steps, finished = collect(runtime, request(seed=100, n=3, **common))
    lengths = [s.completion_tokens for s in finished.samples]
    assert len(set(lengths)) > 1, f"the samples should end at different steps: {lengths}"
    assert [s.sample for s in finished.samples] == [0, 1, 2]
    (state,) = decoder.states
    # the prompt is prefilled once, on one row, and its cache copied to the three samples' rows
    assert state.batch_size == 3 and state.calls[0].ids.shape[0] == 1
    assert all(call.ids.shape[0] == 3 for call in state.calls[1:])
    for i in range(3):
        _, alone_steps, alone = collect(tiny_runtime, request(seed=100 + i, **common))
        mine = [s for s in steps if s.sample == i]
        assert [s.index for s in mine] == list(range(len(mine)))
        assert finished.samples[i].token_ids == alone.first.token_ids == tuple(ids(mine, i))
        assert finished.samples[i].text == alone.text and finished.samples[i].reason == alone.reason
        assert [s.trace.draw for s in mine] == [s.trace.draw for s in alone_steps]
        for ours, theirs in zip(mine, alone_steps):
            assert ours.trace.raw_prob == pytest.approx(theirs.trace.raw_prob, rel=1e-4)
    # every row fed after its sample ended is the filler, the lowest end-of-sequence id
    for i, length in enumerate(lengths):
        fed = [int(call.ids[i, 0]) for call in state.calls[1:]]
        assert fed[length:] == [eos] * len(fed[length:])
    assert len({s.token_ids for s in finished.samples}) == 3


def test_batched_greedy_samples_equal_the_greedy_run_alone(tiny_runtime):
    _, steps, finished = collect(tiny_runtime, request(n=3, max_tokens=8))
    alone = collect(tiny_runtime, request(max_tokens=8))[2]
    assert [s.token_ids for s in finished.samples] == [alone.first.token_ids] * 3
    assert all(ids(steps, i) == list(alone.first.token_ids) for i in range(3))


# -- min_tokens ------------------------------------------------------------------------------------


def test_min_tokens_holds_off_end_of_sequence(tiny_runtime):
    eos = min(tiny_runtime.codec.eos_ids)
    bias = {eos: 100.0}  # greedy would end at once
    short = collect(tiny_runtime, request(logit_bias=bias, max_tokens=20))[2]
    assert short.reason == "eos" and short.completion_tokens == 1 and short.text == ""

    runtime, decoder = recording(tiny_runtime)
    _, steps, held = collect(runtime, request(logit_bias=bias, max_tokens=20, min_tokens=4))
    assert held.reason == "eos" and held.completion_tokens == 5 and steps[4].token_id == eos
    for step, call in zip(steps[:4], decoder.calls):
        logits = call.logits[0].copy()
        logits[list(tiny_runtime.codec.eos_ids)] = -np.inf  # every end-of-sequence token ruled out
        assert step.token_id == int(np.argmax(logits))
        assert all(step.trace.describe(e).prob == 0.0 for e in tiny_runtime.codec.eos_ids)
    assert held.text == tiny_runtime.codec.decode(ids(steps)[:4])


def test_stop_strings_count_only_from_min_tokens_on(tiny_runtime, time_id):
    bias = {time_id: 100.0}
    at_once = collect(tiny_runtime, request(logit_bias=bias, stop=(" time",)))[2]
    assert (at_once.reason, at_once.text, at_once.completion_tokens) == ("stop", "", 1)
    held = collect(tiny_runtime, request(logit_bias=bias, stop=(" time",), min_tokens=3))[2]
    # the stop string is looked for once min_tokens tokens exist: the third token ends the run
    assert (held.reason, held.stop_string, held.text, held.completion_tokens) == ("stop", " time", " time" * 2, 3)


# -- stop strings ----------------------------------------------------------------------------------


def test_a_stop_string_across_three_tokens_ends_the_run_and_never_appears(tiny_runtime, time_id):
    bias = {time_id: 100.0}
    free = collect(tiny_runtime, request(logit_bias=bias))[2]
    assert free.text == " time" * 8
    stop = "e time t"  # the end of token 1, all of token 2, the start of token 3
    _, steps, finished = collect(tiny_runtime, request(logit_bias=bias, stop=(stop,)))
    assert (finished.reason, finished.stop_string) == ("stop", stop)
    assert finished.text == free.text[: free.text.index(stop)] == " tim"
    assert [s.text for s in steps] == [" tim", "", ""]  # "e", then "e time", held back as a possible start
    assert finished.completion_tokens == 3
    assert pieces(steps, finished) == finished.text and stop not in finished.text


def test_a_held_back_prefix_is_released_when_the_stop_string_does_not_follow(tiny_runtime, time_id):
    bias = {time_id: 100.0}
    _, steps, finished = collect(tiny_runtime, request(logit_bias=bias, stop=("e timeX", "zzz")))
    assert finished.reason == "max_tokens" and finished.stop_string is None
    assert finished.text == " time" * 8 == pieces(steps, finished)
    assert any(len(s.text) < len(" time") for s in steps[:-1]), "some text should have been held back"


def test_a_stop_string_that_begins_inside_a_forced_prefix_ends_the_run(tiny_runtime, time_id):
    """The prefix's text goes through the stop-string matcher as it did in the run it came from, so a
    stop string that starts in an early forced token and ends in a new one is found."""
    prefix = tiny_runtime.codec.encode(" Hello world", "plain")
    assert len(prefix) >= 2
    bias = {time_id: 100.0}
    free = collect(tiny_runtime, request(logit_bias=bias, prefix_tokens=prefix))[2]
    assert free.text.startswith(" Hello world time")
    _, steps, finished = collect(tiny_runtime, request(logit_bias=bias, prefix_tokens=prefix, stop=("lo world time",)))
    assert (finished.reason, finished.stop_string) == ("stop", "lo world time")
    assert finished.text == " Hel" and finished.completion_tokens == len(prefix) + 1


def test_the_earliest_stop_string_wins(tiny_runtime, time_id):
    # in " time time", "me t" starts at 3 and "e ti" at 4: the order of the list does not matter
    finished = collect(tiny_runtime, request(logit_bias={time_id: 100.0}, stop=("e ti", "me t")))[2]
    assert (finished.stop_string, finished.text) == ("me t", " ti")


# -- text streaming --------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_pieces_concatenate_to_the_decoded_output(tiny_runtime, seed):
    """Tokens that are parts of characters (the emoji and CJK pieces made likely by a bias) are
    drawn among whole ones: the pieces still join to exactly the decoded text."""
    codec = tiny_runtime.codec
    partial = [t for t in codec.encode("🎉日本", "plain") if "<0x" in codec.token_text(t)]
    _, steps, finished = collect(
        tiny_runtime,
        request(
            temperature=1.0,
            seed=seed,
            max_tokens=40,
            logit_bias={t: 10.0 for t in partial},
        ),
    )
    assert pieces(steps, finished) == finished.text
    assert finished.text == codec.decode([t for t in ids(steps) if t not in codec.eos_ids])
    held = [s for s in steps if s.text == ""]
    assert held and all("<0x" in codec.token_text(s.token_id) for s in held)


def test_multibyte_tokens_are_never_split(tiny_runtime):
    codec = tiny_runtime.codec
    prefix = codec.encode("é🎉日本", "plain")
    texts = [codec.token_text(t) for t in prefix]
    assert sum("<0x" in t for t in texts) >= 4, texts  # the emoji and 日 come in byte pieces
    _, steps, finished = collect(tiny_runtime, request(prefix_tokens=prefix, max_tokens=1))
    released = [s.text for s in steps[: len(prefix)]]
    assert "".join(released) == "é🎉日本"
    assert released == ["é", "", "", "🎉", "", "日", "本"]  # a character appears with its last byte
    assert pieces(steps, finished) == finished.text


# -- prefix_tokens ---------------------------------------------------------------------------------


def test_a_forced_prefix_yields_exactly_those_tokens_then_picks(tiny_runtime):
    prefix = tiny_runtime.codec.encode(" forced words come first", "plain")
    runtime, decoder = recording(tiny_runtime)
    _, steps, finished = collect(runtime, request(temperature=1.0, seed=5, prefix_tokens=prefix, max_tokens=4))
    k = len(prefix)
    assert ids(steps)[:k] == prefix
    assert [s.forced for s in steps] == [True] * k + [False] * 4
    assert finished.completion_tokens == k + 4 and finished.reason == "max_tokens"  # max_tokens counts new tokens
    assert finished.text.startswith(" forced words come first")
    # each forced token is traced at its real position, and still takes its draw
    rng = np.random.default_rng(5)
    for step, call in zip(steps, decoder.calls):
        assert step.trace.raw_prob == pytest.approx(softmax(call.logits[0])[step.token_id], rel=1e-9)
        assert step.trace.draw == rng.random()


def test_a_branch_on_the_same_path_replays_the_parent_exactly(tiny_runtime):
    """Forced tokens take their draws, so continuing a run from its own prefix reproduces it."""
    common = dict(temperature=1.0, seed=99)
    parent = collect(tiny_runtime, request(max_tokens=12, **common))[1]
    branch = collect(tiny_runtime, request(max_tokens=6, prefix_tokens=ids(parent)[:6], **common))[1]
    assert ids(branch) == ids(parent)
    assert [s.forced for s in branch] == [True] * 6 + [False] * 6
    for ours, theirs in zip(branch, parent):
        assert ours.trace.draw == theirs.trace.draw
        assert ours.trace.raw_prob == pytest.approx(theirs.trace.raw_prob, rel=1e-4)


def test_a_branch_through_an_alternative_traces_it_at_its_real_position(tiny_runtime):
    parent = collect(tiny_runtime, request(max_tokens=4, top_n=5))[1]
    alternative = parent[1].trace.alternatives[2]
    assert alternative.id != parent[1].token_id
    branch = collect(tiny_runtime, request(max_tokens=3, prefix_tokens=(parent[0].token_id, alternative.id)))[1]
    assert branch[1].token_id == alternative.id and branch[1].forced
    assert branch[1].trace.raw_prob == pytest.approx(alternative.raw_prob, rel=1e-4)
    assert branch[1].trace.chosen.removed_by == "temperature"  # greedy would not have picked it
    assert len(branch) == 2 + 3 and not branch[2].forced


def test_a_prefix_token_outside_the_vocabulary_is_refused_naming_it(tiny_runtime):
    vocab = tiny_runtime.shape.vocab_size
    for prefix in ((5, vocab), (5, -1)):
        with pytest.raises(ParamError) as raised:
            Generation(tiny_runtime, request(prefix_tokens=prefix))
        assert raised.value.param == "prefix_tokens.1"


# -- cancel ----------------------------------------------------------------------------------------


def test_cancel_ends_within_one_token_and_releases_held_back_text(tiny_runtime, time_id):
    produced: list[TokenStep] = []
    checks: list[int] = []

    def cancelled():
        checks.append(len(produced))
        return len(produced) >= 3

    req = request(logit_bias={time_id: 100.0}, stop=("e timeX",), max_tokens=200)
    for item in run(tiny_runtime, req, cancelled):
        if isinstance(item, TokenStep):
            produced.append(item)
        last = item
    # asked around the prefill's chunks (no token yet), then before every token
    assert len(produced) == 3 and checks[-3:] == [1, 2, 3] and set(checks[:-3]) == {0} and len(checks) > 4
    assert last.reason == "cancelled" and last.completion_tokens == 3
    assert last.tail != ""  # held back as a possible start of the stop string, released by the cancel
    assert last.text == "".join(s.text for s in produced) + last.tail == " time" * 3


def test_a_cancel_ends_every_sample_of_a_batch(tiny_runtime):
    generation = Generation(tiny_runtime, request(temperature=1.0, seed=1, n=3, max_tokens=50))
    driver = SoloDriver(tiny_runtime, generation)
    driver.start()
    driver.step()
    driver.step()
    generation.cancel()
    assert generation.is_done()
    finished = generation.finish()
    assert [(s.reason, s.completion_tokens) for s in finished.samples] == [("cancelled", 2)] * 3


def test_a_cancel_before_the_prefill_ends_raises_cancelled_before_started(tiny_runtime):
    items = []
    with pytest.raises(Cancelled):
        for item in run(tiny_runtime, request(max_tokens=5), lambda: True):
            items.append(item)
    assert items == []  # no Started: the run never began, so nothing is announced or saved


def test_a_cancel_before_the_first_token_reports_no_timing(tiny_runtime):
    began = []  # the cancel is raised once the prefill is over and Started is out
    items = []
    for item in run(tiny_runtime, request(max_tokens=5), lambda: bool(began)):
        items.append(item)
        if isinstance(item, Started):
            began.append(item)
    finished = items[-1]
    steps = [item for item in items if isinstance(item, TokenStep)]
    assert isinstance(items[0], Started) and isinstance(finished, Finished)
    assert steps == [] and finished.reason == "cancelled" and finished.completion_tokens == 0
    assert finished.time_to_first_token_ms is None and finished.decode_tokens_per_s is None
    assert finished.total_ms >= 0


# -- no KV cache -----------------------------------------------------------------------------------


@pytest.mark.parametrize("temperature, top_k", [(0.0, 0), (1.0, 20)])
def test_no_kv_cache_gives_identical_tokens_and_logits(tiny_runtime, temperature, top_k):
    """(Sampling is kept to the top 20: over the tiny model's nearly flat full vocabulary, float
    rounding in the 7th digit reorders near-tied tokens and may move the pick.)"""

    def traced(use_cache):
        runtime, decoder = recording(tiny_runtime)
        req = request(temperature=temperature, top_k=top_k, seed=11, n=2, max_tokens=10, use_cache=use_cache)
        _, steps, _ = collect(runtime, req)
        (state,) = decoder.states
        assert state.use_cache is use_cache
        # (the prompt's call has one row: its cache is copied to both samples' rows)
        return steps, np.stack([np.broadcast_to(call.logits, (2, call.logits.shape[-1])) for call in state.calls])

    cached_steps, cached_logits = traced(True)
    plain_steps, plain_logits = traced(False)
    assert [(s.sample, s.token_id) for s in cached_steps] == [(s.sample, s.token_id) for s in plain_steps]
    np.testing.assert_allclose(cached_logits, plain_logits, rtol=0, atol=1e-4)


# -- context window --------------------------------------------------------------------------------


def test_prompt_too_long_is_refused_naming_the_field(tiny_runtime):
    window = tiny_runtime.shape.context_window
    prompt = "word " * 10
    room = window - len(tiny_runtime.codec.encode(prompt, "completion"))
    cases = [
        (request(prompt, max_tokens=room + 1), "max_tokens"),
        (request(prompt, max_tokens=room - 19, prefix_tokens=[5] * 20), "max_tokens"),  # the prefix counts
        (request("word " * window), "prompt"),
    ]
    for req, param in cases:
        generation = Generation(tiny_runtime, req)
        with pytest.raises(ParamError) as raised:
            generation.prepare()
        assert raised.value.code == "prompt_too_long" and raised.value.param == param
    assert Generation(tiny_runtime, request(prompt, max_tokens=room)).prepare()
    assert Generation(tiny_runtime, request(prompt, max_tokens=room - 20, prefix_tokens=[5] * 20)).prepare()


# -- StepClock -------------------------------------------------------------------------------------


class ScriptedClock:
    """perf_counter's values, one per call, in order."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def __call__(self) -> float:
        return self.values.pop(0)


def test_step_clock_times_the_first_token_and_the_decode_rate(monkeypatch):
    monkeypatch.setattr(StepClock, "now", staticmethod(ScriptedClock(10.0, 10.5, 11.0, 12.0, 13.0)))
    clock = StepClock()  # 10.0
    assert clock.tick(3) == 10.5  # the first step: prefill and first pick, not counted in the rate
    clock.tick(3)  # 11.0
    clock.tick(3)  # 12.0
    timing = clock.timing()  # 13.0
    assert timing == {"time_to_first_token_ms": 500.0, "decode_tokens_per_s": 6 / 1.5, "total_ms": 3000.0}


def test_step_clock_without_a_second_step_has_no_rate(monkeypatch):
    monkeypatch.setattr(StepClock, "now", staticmethod(ScriptedClock(1.0, 2.0, 4.0, 5.0, 7.0)))
    idle = StepClock()
    assert idle.timing() == {"time_to_first_token_ms": None, "decode_tokens_per_s": None, "total_ms": 1000.0}
    once = StepClock()  # 4.0
    once.tick(1)  # 5.0
    assert once.timing() == {"time_to_first_token_ms": 1000.0, "decode_tokens_per_s": None, "total_ms": 3000.0}


def test_a_runs_decode_rate_counts_the_tokens_of_every_sample(tiny_runtime, monkeypatch):
    """With a clock that moves one second per reading, a step takes the same time whatever the
    batch, so three samples make tokens exactly three times as fast as one."""

    def timing(n):
        now = iter(range(10**6))
        monkeypatch.setattr(StepClock, "now", staticmethod(lambda: float(next(now))))
        return collect(tiny_runtime, request(temperature=1.0, seed=2, n=n, max_tokens=6))[2]

    one, three = timing(1), timing(3)
    assert one.decode_tokens_per_s is not None and one.time_to_first_token_ms > 0
    assert three.decode_tokens_per_s == pytest.approx(3 * one.decode_tokens_per_s, rel=1e-12)
    assert three.time_to_first_token_ms == one.time_to_first_token_ms
    assert one.total_ms > one.time_to_first_token_ms
