"""The device path of the KV cache (inference/device_binding.py) run on the CPU provider: buffers
held by their OrtValues with host mirrors, rows bound by address, rows moved through the host.
Each case runs the same calls on a plain decoder and on a mirrored one and compares them."""

from __future__ import annotations

import numpy as np
import pytest

from inference.device_binding import CacheRows
from inference.engine import CPU, Decoder
from inference.kv_cache import KVCache
from inference.model_dir import MODEL_FILE

PROMPTS = [[0, 504, 3575, 282], [0, 17, 9, 4649, 314, 28], [0, 88]]


def decoders(runtime, model_file) -> tuple[Decoder, Decoder]:
    """The plain decoder and a mirrored one over the same graph."""
    plain = Decoder(model_file, runtime.shape, (CPU,), intra_op_threads=1)
    mirrored = Decoder(model_file, runtime.shape, (CPU,), intra_op_threads=1)
    mirrored.mirrored_cache = True
    return plain, mirrored


@pytest.fixture(scope="module")
def tiny_pair(tiny_runtime):
    from inference.modelbuild import default_tiny_dir

    return decoders(tiny_runtime, default_tiny_dir() / MODEL_FILE)


def greedy(decoder: Decoder, prompt: list[int], steps: int) -> tuple[list[int], np.ndarray]:
    state = decoder.new_state()
    logits = state.append_tokens(prompt)
    tokens = []
    for _ in range(steps):
        tokens.append(int(np.argmax(logits[0])))
        logits = state.append_tokens([tokens[-1]])
    return tokens, logits


def test_a_mirrored_cache_keeps_its_buffers_apart_from_the_mirrors(tiny_pair):
    _, mirrored = tiny_pair
    cache = mirrored.empty_past(2)
    assert cache.mirrored and cache.buffers[0].ctypes.data != cache.values[0].data_ptr()
    assert isinstance(cache.views(0, 1), CacheRows) and cache.views(0, 2) is cache.values


def test_a_mirrored_decode_computes_what_the_plain_one_does(tiny_pair):
    plain, mirrored = tiny_pair
    tokens, logits = greedy(plain, PROMPTS[1], 300)  # past the first 256 positions: the cache grows once
    tokens_m, logits_m = greedy(mirrored, PROMPTS[1], 300)
    assert tokens_m == tokens
    np.testing.assert_array_equal(logits_m, logits)


def slots_run(decoder: Decoder) -> tuple[list[np.ndarray], KVCache]:
    """Three prompts prefilled together into slots 3, 0, 2 of a 4-row cache, then rows 2..4 and
    0..1 stepped on their own (rows bound by address on the mirrored cache), then a reorder."""
    cache = decoder.empty_past(4)
    lengths = np.array([len(p) for p in PROMPTS])
    cache.reserve(int(lengths.max()) + 2, 0)
    out = [decoder.prefill_fresh_rows(PROMPTS, cache, [3, 0, 2])]
    past = np.array([lengths[2], lengths[0]])  # rows 2 and 3
    out.append(decoder.run_rows(np.array([[5], [6]]), cache, past, first_row=2))
    out.append(decoder.run_rows(np.array([[7]]), cache, np.array([lengths[1]]), first_row=0))
    cache.copy_rows([1], [3], int(lengths[0]) + 1)  # row 3 forked into the free row 1
    out.append(decoder.run_rows(np.array([[8], [8]]), cache, np.array([lengths[1] + 1, lengths[0] + 1]), first_row=0))
    out.append(decoder.run_rows(np.array([[8]]), cache, np.array([lengths[0] + 1]), first_row=3))
    return out, cache


def test_slots_bound_by_address_and_rows_moved_through_the_host_match_the_plain_cache(tiny_pair):
    plain, mirrored = tiny_pair
    expected, plain_cache = slots_run(plain)
    got, mirrored_cache = slots_run(mirrored)
    for want, have in zip(expected, got):
        np.testing.assert_array_equal(have, want)
    for i in range(len(plain_cache.values)):
        np.testing.assert_array_equal(mirrored_cache._host(i), plain_cache._host(i))
    # the forked row decoded the same token after the same past as its source: the same logits
    np.testing.assert_array_equal(got[3][1], got[4][0])


def test_a_beam_reorder_on_a_mirrored_cache_matches_the_plain_one(tiny_pair):
    results = []
    for decoder in tiny_pair:
        state = decoder.new_state(batch_size=3)
        state.append_tokens(np.array([PROMPTS[0], PROMPTS[0][::-1], [1, 2, 3, 4]]))
        state.reorder([2, 2, 0])
        results.append(state.append_tokens(np.array([[11], [12], [13]])))
    np.testing.assert_array_equal(results[1], results[0])


def test_sliding_window_shifts_on_a_mirrored_cache_match_the_plain_one(tmp_path_factory):
    from inference.modelbuild import Progress
    from inference.modelbuild.tiny_gemma import build_tiny_gemma
    from inference.runtime import load_runtime

    model_dir = build_tiny_gemma(tmp_path_factory.mktemp("models") / "tiny-gemma", progress=Progress())
    plain, mirrored = decoders(load_runtime(model_dir, (CPU,), intra_op_threads=1), model_dir / MODEL_FILE)
    assert mirrored.sliding is not None
    prompt = [2, 10, 20, 30, 40]  # its vocabulary is small
    tokens, logits = greedy(plain, prompt, 40)  # window 8, buffers of 16: a shift every few steps
    tokens_m, logits_m = greedy(mirrored, prompt, 40)
    assert tokens_m == tokens
    np.testing.assert_array_equal(logits_m, logits)
