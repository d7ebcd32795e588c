"""The prompt fed in chunks, with a cancel check between them: the same logits as one call (the
real model, whose 4-bit kernels are where a split could show), and a cancel seen within a chunk."""

from __future__ import annotations

import numpy as np
import pytest

from inference.decoding.generation import GenerationRequest, run
from inference.decoding.loop_params import LoopParams
from inference.errors import Cancelled
from inference.prefill import PREFILL_CHUNK, prefill
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


@pytest.mark.parametrize("num_beams", [1, 3], ids=["sampling", "beam search"])
def test_a_run_cancelled_during_its_prefill_never_starts(real_runtime, num_beams):
    loop = LoopParams(max_tokens=3, num_beams=num_beams)
    request = GenerationRequest(PROMPT, sampling=SamplingParams(temperature=0), loop=loop)
    # not before the first chunk (nor, for beam search, before the search is set up); before the second
    checks = iter([False, True] if num_beams == 1 else [False, False, True])
    with pytest.raises(Cancelled):
        next(run(real_runtime, request, lambda: next(checks, True)))
