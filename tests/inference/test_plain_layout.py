"""The decoder on optimum's plain layout (Gemma as built today: no position_ids, present a new
tensor): served through the engine's ``KVCache``, rows of different lengths in one ``run_rows``
and fresh prompts in one ``prefill_fresh_rows`` give each row's own logits, as the sequence alone
through onnxruntime directly does. On the tiny Gemma (its sliding window is 8, so 24 tokens cross it)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from inference import model_dir as md
from inference.modelbuild.progress import Progress
from inference.modelbuild.tiny_gemma import build_tiny_gemma
from inference.runtime import load_runtime
from tests.inference.modelbuild.gemma_session import forward

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def tiny_gemma(tmp_path_factory):
    return build_tiny_gemma(tmp_path_factory.mktemp("models") / "tiny-gemma", progress=Progress())


@pytest.fixture(scope="module")
def runtime(tiny_gemma):
    return load_runtime(tiny_gemma, intra_op_threads=1, model_id="gemma-3-270m")


@pytest.fixture(scope="module")
def alone(tiny_gemma):
    """Every position's logits of a sequence fed one token at a time, straight through onnxruntime."""
    session = ort.InferenceSession(str(tiny_gemma / md.MODEL_FILE), providers=["CPUExecutionProvider"])
    pasts = [i for i in session.get_inputs() if i.name.startswith("past_key_values.")]

    def logits(ids: list[int]) -> np.ndarray:  # [n, V]
        past = {i.name: np.zeros((1, i.shape[1], 0, i.shape[3]), np.float32) for i in pasts}  # [1, kv, 0, D]
        rows = []
        for token in ids:
            out, past = forward(session, [token], past)
            rows.append(out[-1])
        return np.stack(rows)

    return logits


def test_the_plain_layout_is_recognised(runtime):
    assert runtime.decoder.plain_layout
    assert runtime.codec.document_start == "<bos>"
    assert runtime.info.id == "gemma-3-270m"


def test_rows_of_different_lengths_each_get_their_own_logits(runtime, alone):
    vocab = runtime.shape.vocab_size
    sequences = [
        RNG.integers(3, vocab, size=n).tolist() for n in (24, 13, 5)
    ]  # longest first: the rows still decoding are rows 0..R
    past = runtime.decoder.empty_past(len(sequences))
    past.reserve(32, 0)
    first = runtime.decoder.prefill_fresh_rows([s[:3] for s in sequences], past, [0, 1, 2])  # [3, V]
    for row, sequence in enumerate(sequences):
        np.testing.assert_allclose(first[row], alone(sequence[:3])[-1], atol=1e-4)
    lengths = np.array([3, 3, 3], dtype=np.int64)
    for step in range(3, 24):
        live = [row for row, s in enumerate(sequences) if len(s) > step]
        ids = np.array([[sequences[row][step]] for row in live], dtype=np.int64)  # [R, 1]
        logits = runtime.decoder.run_rows(ids, past, lengths[live], 0)  # [R, V]
        lengths[live] += 1
        for index, row in enumerate(live):
            np.testing.assert_allclose(logits[index], alone(sequences[row][: step + 1])[-1], atol=1e-4)


def test_rows_at_different_past_lengths_share_one_call(runtime, alone):
    a, b = RNG.integers(3, 200, size=12).tolist(), RNG.integers(3, 200, size=4).tolist()
    past = runtime.decoder.empty_past(2)
    past.reserve(16, 0)
    runtime.decoder.prefill_fresh_rows([a[:11], b[:3]], past, [0, 1])
    logits = runtime.decoder.run_rows(np.array([[a[11]], [b[3]]], dtype=np.int64), past, np.array([11, 3]), 0)  # [2, V]
    np.testing.assert_allclose(logits[0], alone(a)[-1], atol=1e-4)
    np.testing.assert_allclose(logits[1], alone(b)[-1], atol=1e-4)


def test_a_decode_state_past_the_window_equals_onnxruntime_alone(runtime, alone):
    ids = RNG.integers(3, 200, size=20).tolist()
    state = runtime.decoder.new_state(1)
    every = state.append_tokens(ids[:6], all_logits=True)[0]  # [6, V]
    np.testing.assert_allclose(every, alone(ids[:6]), atol=1e-4)
    for n in range(6, 20):
        logits = state.append_tokens([ids[n]])[0]
        np.testing.assert_allclose(logits, alone(ids[: n + 1])[-1], atol=1e-4)
