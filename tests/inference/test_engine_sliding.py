"""The sliding layers' cache on the tiny Gemma (window 8): their buffers stop at window + slack (16
positions, a shift to the last 9 when a step would overflow), and every way the engine uses a cache
gives the logits of a cache that holds every position (a ``SlidingWindow`` too large to ever shift).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from inference.kv_cache import KVCache, SlidingWindow
from inference.modelbuild.tiny_gemma import SLIDING_WINDOW

# float32 rounding only (a shifted buffer sums the same window from other offsets; a step vs a prefill): < 1e-6 seen
TOL = {"rtol": 0, "atol": 5e-6}


@pytest.fixture(scope="module")
def decoder(tiny_gemma_runtime):
    return tiny_gemma_runtime.decoder


@pytest.fixture(scope="module")
def ids():
    return np.random.default_rng(7).integers(10, 300, size=(3, 120)).astype(np.int64)  # [3, 120]


def unbounded(decoder, batch_size: int) -> KVCache:
    """A cache whose sliding buffers hold every position, as every layer's did before."""
    whole = replace(decoder.sliding, capacity=decoder.shape.context_window, keep=decoder.shape.context_window - 1)
    return KVCache(decoder.shape, batch_size, KVCache.MIN_CAPACITY, "cpu", whole)


def reference_logits(decoder, ids: np.ndarray) -> np.ndarray:
    """Each position's next-token logits [B, T, V] from one prefill into an unbounded cache."""
    logits, _ = decoder.run(ids, unbounded(decoder, len(ids)), 0, all_logits=True)
    return logits


def test_the_graph_records_its_sliding_layers_and_window(decoder):
    assert decoder.sliding == SlidingWindow.sized([0, 2], SLIDING_WINDOW)
    assert (decoder.sliding.capacity, decoder.sliding.keep) == (16, 9)


def test_a_long_decode_with_shifts_gives_the_unbounded_caches_logits(decoder, ids):
    """One token at a time to 120 (15 windows): the sliding buffers stay at 16 positions, shifted
    every 7 steps, and the logits are those of a cache holding every position."""
    expected = reference_logits(decoder, ids[:1])[0]  # [T, V]
    state = decoder.new_state()
    got = [state.append_tokens(ids[0, :3])[0]]
    offsets = set()
    for t in range(3, ids.shape[1]):
        got.append(state.append_tokens(ids[0, t : t + 1])[0])
        offsets.add(int(state.past.offsets[0]))
    np.testing.assert_allclose(np.stack(got), expected[2:], **TOL)
    assert state.past.sliding_capacity == 16 and state.past.capacity == KVCache.MIN_CAPACITY
    assert len(offsets) > 10  # it did shift, many times


def test_a_long_prompt_grows_the_sliding_buffers_for_its_step_only(decoder, ids):
    expected = reference_logits(decoder, ids[:1])[0]
    state = decoder.new_state()
    got = [state.append_tokens(ids[0, :50])[0]]
    assert state.past.sliding_capacity == 50  # the prompt's step needed all of them
    for t in range(50, 60):
        got.append(state.append_tokens(ids[0, t : t + 1])[0])
    assert state.past.sliding_capacity == 16 and state.past.offsets[0] > 0  # back to its size after a shift
    np.testing.assert_allclose(np.stack(got), expected[49:60], **TOL)


def test_batched_rows_of_different_lengths(decoder, ids):
    """Three prompts of 5, 12 and 30 tokens prefilled in one call (the longest past the buffers'
    size: its row keeps its last 9), then 40 steps over rows each at its own length."""
    lengths = [5, 12, 30]
    cache = decoder.empty_past(3)
    cache.reserve(max(lengths), 0)
    first = decoder.prefill_fresh_rows([ids[r, :n].tolist() for r, n in enumerate(lengths)], cache, [0, 1, 2])
    assert cache.offsets.tolist() == [0, 0, 30 - 9]
    got = [first]  # [3, V] each
    past = np.array(lengths)
    for _ in range(40):
        cache.reserve(int(past.max()) + 1, int(past.max()))
        got.append(decoder.run_rows(ids[np.arange(3), past][:, None], cache, past))
        past += 1
    got = np.stack(got, axis=1)  # [3, 41, V]
    for row, n in enumerate(lengths):
        expected = reference_logits(decoder, ids[row : row + 1, : n + 40])[0]
        np.testing.assert_allclose(got[row], expected[n - 1 : n + 40], **TOL)


def test_a_verify_step_across_a_shift_then_a_rollback_by_length(decoder, ids):
    """The batch runner's speculative rollback: 5 tokens fed in one step that shifts the row, 3 of
    them forgotten by feeding again from 2 past the step's start."""
    cache = decoder.empty_past(1)
    decoder.run(ids[:1, :14], cache, 0)
    offset = int(cache.offsets[0])
    decoder.run_rows(ids[:1, 14:19], cache, np.array([14]), all_logits=True)
    assert cache.offsets[0] > offset  # the step shifted
    got = decoder.run_rows(ids[:1, 16:17], cache, np.array([16]))  # [1, V]: after 17 positions
    expected = reference_logits(decoder, ids[:1, :17])[0, -1]
    np.testing.assert_allclose(got[0], expected, **TOL)


def test_truncate_across_a_shift(decoder, ids):
    """A rewind the kept margin covers moves nothing; a deeper one (past what a shift dropped) feeds
    the ids again; either way decoding goes on with the unbounded cache's logits."""
    expected = reference_logits(decoder, ids[:1])[0]
    state = decoder.new_state()
    state.append_tokens(ids[0, :40])
    state.append_tokens(ids[0, 40:41])
    past = state.past
    state.truncate(39)  # the margin: keep 9 > window - 1 = 7
    assert state.past is past
    np.testing.assert_allclose(state.append_tokens(ids[0, 39:40])[0], expected[39], **TOL)
    state.append_tokens(ids[0, 40:60])
    assert not state.past.holds(30)
    state.truncate(30)
    assert state.past is not past and state.length == 30
    got = [state.append_tokens(ids[0, t : t + 1])[0] for t in range(30, 50)]
    np.testing.assert_allclose(np.stack(got), expected[30:50], **TOL)


def test_an_overdeep_rewind_by_length_is_refused(decoder, ids):
    cache = decoder.empty_past(1)
    decoder.run(ids[:1, :40], cache, 0)
    decoder.run_rows(ids[:1, 40:41], cache, np.array([40]))
    with pytest.raises(ValueError, match="rewound past what a shift dropped"):
        decoder.run_rows(ids[:1, 20:21], cache, np.array([20]))


def test_reorder_copy_rows_and_take_rows_across_shifts(decoder, ids):
    """Beam-style: three rows decode past several shifts, then rows are picked (same batch size:
    ``copy_rows`` in place; a smaller one: new buffers), and each goes on as its source would."""
    state = decoder.new_state(batch_size=3)
    state.append_tokens(ids[:, :20])
    for t in range(20, 33):
        state.append_tokens(ids[:, t : t + 1])
    state.reorder([2, 0, 0])
    got_same = state.append_tokens(ids[[2, 0, 0], 33:34])  # [3, V]
    state.reorder([0, 2])
    got_smaller = state.append_tokens(ids[[2, 0], 34:35])  # [2, V]
    expected = {row: reference_logits(decoder, ids[row : row + 1, :35])[0] for row in (0, 2)}
    for got, rows, t in ((got_same, [2, 0, 0], 33), (got_smaller, [2, 0], 34)):
        for r, source in enumerate(rows):
            np.testing.assert_allclose(got[r], expected[source][t], **TOL)


def test_copy_rows_copies_a_shifted_prompt_to_other_slots(decoder, ids):
    """The runner copies a prefilled prompt's cache to the run's other slots."""
    cache = decoder.empty_past(3)
    cache.reserve(30, 0)
    decoder.run_rows(ids[:1, :30], cache, np.array([0]))
    decoder.run_rows(ids[:1, 30:31], cache, np.array([30]))  # shifts row 0
    cache.copy_rows([1, 2], [0, 0], 31)
    assert cache.offsets.tolist() == [cache.offsets[0]] * 3 and cache.offsets[0] > 0
    got = decoder.run_rows(ids[:1, [31, 31, 31]].T, cache, np.array([31, 31, 31]))
    expected = reference_logits(decoder, ids[:1, :32])[0, -1]
    for row in range(3):
        np.testing.assert_allclose(got[row], expected, **TOL)


def test_the_sliding_buffers_take_less_memory_at_length(decoder, ids):
    state = decoder.new_state()
    state.append_tokens(ids[0, :100])
    state.append_tokens(ids[0, 100:101])
    whole = unbounded(decoder, 1)
    decoder.run(ids[:1, :101], whole, 0)
    assert state.past.nbytes < whole.nbytes
    per_position = decoder.shape.kv_heads * decoder.shape.head_dim * 4 * 2  # bytes, keys and values
    assert state.past.nbytes == per_position * (state.past.capacity + 2 * state.past.sliding_capacity)


def test_a_model_without_sliding_layers_keeps_one_capacity(tiny_runtime):
    decoder = tiny_runtime.decoder
    assert decoder.sliding is None
    cache = decoder.empty_past(1)
    assert cache.sliding_capacity == 0 and cache.sliding_lengths(0, np.array([5]), 1) is None
    assert {buffer.shape[2] for buffer in cache.buffers} == {cache.capacity}
