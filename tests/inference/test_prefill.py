"""The prompt fed in chunks, with a cancel check between them: the same logits as one call (the
real model, whose 4-bit kernels are where a split could show), and a cancel seen within a chunk."""

from __future__ import annotations

import numpy as np
import pytest

from inference.errors import Cancelled
from inference.generation import PREFILL_CHUNK, GenerationRequest, prefill, run
from inference.loop_params import LoopParams
from inference.sampling import SamplingParams

pytestmark = pytest.mark.real_model

PROMPT = "The history of the old harbour town is long and full of turns. " * 50  # about 700 tokens


def greedy_after(runtime, ids, chunk, steps=4):
    state = runtime.decoder.new_state()
    logits = prefill(state, ids, chunk=chunk)
    first = logits.copy()
    tokens = []
    for _ in range(steps):
        tokens.append(int(np.argmax(logits[0])))
        logits = state.append_tokens([tokens[-1]])
    return first, tokens


def test_chunked_prefill_matches_one_call(real_runtime):
    ids = real_runtime.codec.encode(PROMPT, "completion")
    assert len(ids) > PREFILL_CHUNK  # at least two chunks
    whole, whole_tokens = greedy_after(real_runtime, ids, chunk=len(ids))
    chunked, chunked_tokens = greedy_after(real_runtime, ids, chunk=PREFILL_CHUNK)
    assert chunked_tokens == whole_tokens
    np.testing.assert_allclose(chunked, whole, rtol=0, atol=1e-4)


def test_a_cancel_is_seen_between_chunks(real_runtime):
    ids = real_runtime.codec.encode(PROMPT, "completion")
    state = real_runtime.decoder.new_state()
    calls = []

    def cancelled_after_one_chunk() -> bool:
        calls.append(state.length)
        return state.length > 0

    with pytest.raises(Cancelled):
        prefill(state, ids, cancelled_after_one_chunk)
    assert state.length == PREFILL_CHUNK and calls == [0, PREFILL_CHUNK]


def test_a_run_cancelled_during_its_prefill_never_starts(real_runtime):
    request = GenerationRequest(PROMPT, sampling=SamplingParams(temperature=0), loop=LoopParams(max_tokens=3))
    checks = iter([False, True])  # not before the first chunk; before the second
    with pytest.raises(Cancelled):
        next(run(real_runtime, request, lambda: next(checks, True)))
