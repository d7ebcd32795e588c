"""The ONNX Runtime engine on a tiny random decoder exported exactly like the real one."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from inference.engine import CPU, CUDA, Decoder, choose_providers
from inference.model_dir import MODEL_FILE

PROMPT = [0, 504, 3575, 282, 4649, 314]


def greedy_ids(state, prompt, steps):
    logits = state.append_tokens(prompt)
    out = []
    for _ in range(steps):
        token = int(np.argmax(logits[0]))
        out.append(token)
        logits = state.append_tokens([token])
    return out, logits


def test_cache_and_full_recompute_give_the_same_logits(tiny_runtime):
    decoder = tiny_runtime.decoder
    cached_ids, cached_logits = greedy_ids(decoder.new_state(use_cache=True), PROMPT, 6)
    full_ids, full_logits = greedy_ids(decoder.new_state(use_cache=False), PROMPT, 6)
    assert cached_ids == full_ids
    np.testing.assert_allclose(cached_logits, full_logits, rtol=1e-3, atol=1e-3)


def test_logits_shape_and_state_length(tiny_runtime):
    state = tiny_runtime.decoder.new_state()
    logits = state.append_tokens(PROMPT)
    assert logits.shape == (1, tiny_runtime.shape.vocab_size) and logits.dtype == np.float32
    state.append_tokens([7])
    assert state.length == len(PROMPT) + 1


def test_batch_rows_match_single_runs(tiny_runtime):
    decoder = tiny_runtime.decoder
    batch = decoder.new_state(batch_size=2)
    logits = batch.append_tokens(PROMPT)
    logits = batch.append_tokens(np.array([[11], [12]]))
    for row, token in enumerate((11, 12)):
        single = decoder.new_state()
        single.append_tokens(PROMPT)
        np.testing.assert_allclose(logits[row], single.append_tokens([token])[0], rtol=1e-3, atol=1e-3)


def test_reorder_moves_each_rows_cache_with_it(tiny_runtime):
    decoder = tiny_runtime.decoder
    batch = decoder.new_state(batch_size=2)
    batch.append_tokens(PROMPT)
    batch.append_tokens(np.array([[11], [12]]))
    batch.reorder([1, 1, 0])
    logits = batch.append_tokens(np.array([[5], [6], [5]]))
    reference = decoder.new_state()
    reference.append_tokens(PROMPT + [12])
    np.testing.assert_allclose(logits[0], reference.append_tokens([5])[0], rtol=1e-3, atol=1e-3)
    reference = decoder.new_state()
    reference.append_tokens(PROMPT + [11])
    np.testing.assert_allclose(logits[2], reference.append_tokens([5])[0], rtol=1e-3, atol=1e-3)


def test_a_step_appends_in_place_to_the_shared_buffer(tiny_runtime):
    state = tiny_runtime.decoder.new_state()
    state.append_tokens(PROMPT)
    cache = state._past
    buffers = [id(b) for b in cache.buffers]
    before = cache.buffers[0][:, :, : len(PROMPT)].copy()
    assert not cache.buffers[0][:, :, len(PROMPT)].any()
    state.append_tokens([7])
    assert [id(b) for b in cache.buffers] == buffers  # no new buffer: past and present are one
    np.testing.assert_array_equal(cache.buffers[0][:, :, : len(PROMPT)], before)  # the earlier positions untouched
    assert cache.buffers[0][:, :, len(PROMPT)].any()  # the new token's keys written after them


def test_a_cache_is_bound_once_and_again_only_when_it_grows(tiny_runtime):
    state = tiny_runtime.decoder.new_state()
    first = state.append_tokens(PROMPT)
    kept = first.copy()
    binding = state._past.binding[2]
    state.append_tokens([7])
    assert state._past.binding[2] is binding  # the step reused the cache's binding
    np.testing.assert_array_equal(first, kept)  # each run's logits are an array of its own
    state._past.reserve(state._past.capacity + 1, state.length)
    assert state._past.binding is None  # new buffers: the old binding is dropped with the old ones
    state.append_tokens([8])
    assert state._past.binding[2] is not binding


def test_a_rows_view_is_kept_while_the_same_rows_are_asked_for(tiny_runtime):
    cache = tiny_runtime.decoder.empty_past(4)
    view = cache.views(1, 3)
    assert cache.views(1, 3) is view  # the same OrtValues: a batch's binding is kept with them
    assert cache.views(0, 2) is not view
    cache.reserve(cache.capacity + 1, 0)
    assert cache.views(0, 2)[0].shape()[2] == cache.capacity  # over the new buffers


def test_growing_past_the_capacity_keeps_the_cache(tiny_runtime):
    """Steps that cross the buffer's first capacity (256) give what a full recompute gives."""
    decoder = tiny_runtime.decoder
    prompt = list(np.random.default_rng(3).integers(3, 49152, 250))
    state = decoder.new_state()
    cached, _ = greedy_ids(state, prompt, 12)
    assert state._past.capacity >= 262 and state.length == 262
    full, _ = greedy_ids(decoder.new_state(use_cache=False), prompt, 12)
    assert cached == full


def test_all_logits_are_each_positions_next_token_logits(tiny_runtime):
    decoder = tiny_runtime.decoder
    every = decoder.new_state().append_tokens(PROMPT, all_logits=True)  # [1, S, V]
    assert every.shape == (1, len(PROMPT), tiny_runtime.shape.vocab_size)
    for j in (0, 3, len(PROMPT) - 1):
        alone = decoder.new_state().append_tokens(PROMPT[: j + 1])  # [1, V]: the last position only
        np.testing.assert_allclose(every[0, j], alone[0], rtol=1e-4, atol=1e-4)
    state = decoder.new_state()
    state.append_tokens(PROMPT[:4])
    tail = state.append_tokens(PROMPT[4:], all_logits=True)  # on top of a cache
    np.testing.assert_allclose(tail[0], every[0, 4:], rtol=1e-4, atol=1e-4)


def test_context_window_is_enforced(tiny_runtime):
    state = tiny_runtime.decoder.new_state()
    window = tiny_runtime.shape.context_window
    with pytest.raises(ValueError, match="context window"):
        state.append_tokens(list(range(window + 1)))


def test_wrong_batch_shape_is_refused(tiny_runtime):
    state = tiny_runtime.decoder.new_state(batch_size=2)
    with pytest.raises(ValueError, match=r"\[2, S>0\]"):
        state.append_tokens(np.zeros((3, 1), dtype=np.int64))


def test_cuda_falls_back_to_cpu_with_a_warning(tiny_runtime, caplog, tmp_path):
    assert choose_providers([CUDA, CPU])[-1] == CPU
    with caplog.at_level(logging.WARNING, logger="inference.engine"):
        from inference.modelbuild import default_tiny_dir

        decoder = Decoder(default_tiny_dir() / MODEL_FILE, tiny_runtime.shape, providers=[CUDA, CPU], intra_op_threads=1)
    assert decoder.provider == CPU
    assert any("CUDAExecutionProvider" in r.getMessage() for r in caplog.records)


def test_a_model_of_another_layout_is_refused(tiny_runtime):
    from dataclasses import replace

    from inference.modelbuild import default_tiny_dir

    with pytest.raises(ValueError, match="not a decoder built by inference.modelbuild"):
        Decoder(default_tiny_dir() / MODEL_FILE, replace(tiny_runtime.shape, num_layers=40), intra_op_threads=1)


def test_a_session_that_takes_turns_does_not_spin_and_gives_the_same_logits(tiny_runtime):
    from inference.modelbuild import default_tiny_dir

    model_path = default_tiny_dir() / MODEL_FILE
    turns = Decoder(model_path, tiny_runtime.shape, (CPU,), 1, spinning=False)

    def spin_entry(decoder: Decoder) -> str | None:  # None: ONNX Runtime's default, spinning
        try:
            return decoder.session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning")
        except RuntimeError:
            return None

    assert spin_entry(turns) == "0"
    assert spin_entry(tiny_runtime.decoder) is None
    np.testing.assert_array_equal(turns.new_state().append_tokens(PROMPT), tiny_runtime.decoder.new_state().append_tokens(PROMPT))
