"""The real Gemma 3 270M build against transformers' fp32 model of the same GGUF.

Marked ``gemma_model`` and skipped unless ``.models/gemma-3-270m`` (or the directory named by
``$GEMMA_TEST_MODEL_DIR``, e.g. a build made with ``--model-dir``) has been built
(``python -m inference.modelbuild --model gemma-3-270m``, ~5 minutes on a shared 2-core machine);
``scripts/test`` does not build it. These tests load transformers' fp32 model (~1 minute) and
decode ~400 tokens each way after prompts of up to 600: ~11 minutes on the shared 2-core machine
under load (load average 12), too slow for CI's default run.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from inference import model_dir as md
from inference import model_kernels
from inference.modelbuild.quality import MIXED_TEXT, divergence
from inference.models import GEMMA
from tests.inference.modelbuild.gemma_session import forward

pytestmark = pytest.mark.gemma_model

GEMMA_DIR = Path(os.environ.get("GEMMA_TEST_MODEL_DIR") or md.MODELS_ROOT / GEMMA.dir_name)
PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village by the sea,"]
NEW_TOKENS = 100


@pytest.fixture(scope="module")
def gemma_dir():
    try:
        manifest = md.read_manifest(GEMMA_DIR)
    except md.ModelNotBuiltError:
        pytest.skip("Gemma is not built: python -m inference.modelbuild --model gemma-3-270m")
    assert manifest["recipe_version"] == GEMMA.recipe.recipe_version, "the Gemma build is stale: rebuild it"
    return GEMMA_DIR


@pytest.fixture(scope="module")
def session(gemma_dir):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    model_kernels.register_beside(options, gemma_dir / md.MODEL_FILE)  # a build with our kernels needs them
    return ort.InferenceSession(str(gemma_dir / md.MODEL_FILE), options, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def tokenizer(gemma_dir):
    return Tokenizer.from_file(str(gemma_dir / md.TOKENIZER_FILE))


@pytest.fixture(scope="module")
def reference():
    """transformers' fp32 Gemma from the packaged GGUF (the weights the fp32 export holds)."""
    from inference.modelbuild import steps
    from inference.modelbuild.source import locate_gguf

    steps.go_offline()
    from transformers import AutoModelForCausalLM

    path = locate_gguf(GEMMA.source)
    return AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True).eval()


def onnx_greedy(session, ids: list[int], n: int) -> list[int]:
    past = {i.name: np.zeros((1, 1, 0, 256), np.float32) for i in session.get_inputs() if i.name.startswith("past_key_values.")}
    logits, past = forward(session, ids, past)
    out = [int(logits[-1].argmax())]
    for _ in range(n - 1):
        logits, past = forward(session, out[-1:], past)
        out.append(int(logits[-1].argmax()))
    return out


def torch_greedy(reference, ids: list[int], n: int) -> list[int]:
    import torch

    with torch.no_grad():
        out = reference.generate(torch.tensor([ids]), max_new_tokens=n, min_new_tokens=n, do_sample=False)
    return out[0, len(ids) :].tolist()


def test_agreement_and_kl_against_fp32(session, tokenizer, reference):
    import torch

    ids = [2, *tokenizer.encode(MIXED_TEXT, add_special_tokens=False).ids]
    got, _ = forward(
        session, ids, {i.name: np.zeros((1, 1, 0, 256), np.float32) for i in session.get_inputs() if "past" in i.name}
    )
    with torch.no_grad():
        expected = reference(torch.tensor([ids])).logits[0].numpy()
    result = divergence(expected, got)
    assert result["agreement"] == 1.0 and result["mean_kl"] < 5e-5, result


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_equals_transformers(session, tokenizer, reference, prompt):
    ids = tokenizer.encode(prompt).ids  # <bos> first
    assert onnx_greedy(session, ids, NEW_TOKENS) == torch_greedy(reference, ids, NEW_TOKENS)


def test_greedy_equals_transformers_past_the_window(session, tokenizer, reference):
    """A 600-token prompt, then 100 tokens: the sliding layers see only their last 512 positions."""
    ids = tokenizer.encode(MIXED_TEXT * 3).ids[:600]
    assert len(ids) == 600
    assert onnx_greedy(session, ids, NEW_TOKENS) == torch_greedy(reference, ids, NEW_TOKENS)


def test_the_engines_cache_that_stops_at_the_window_decodes_as_transformers(gemma_dir, tokenizer, reference):
    """The engine (``DecodeState``) keeps the sliding layers' buffers at window + slack (768 positions,
    a shift to the last 575 when a step would overflow): a 700-token prompt and 140 greedy tokens
    cross a shift and give transformers' tokens."""
    from inference.runtime import load_runtime

    ids = tokenizer.encode(MIXED_TEXT * 4).ids[:700]
    state = load_runtime(gemma_dir).decoder.new_state()
    logits = state.append_tokens(ids)
    out = []
    for _ in range(140):
        out.append(int(logits[0].argmax()))
        logits = state.append_tokens(out[-1:])
    assert state.past.sliding_capacity == 768 and state.past.offsets[0] > 0  # it shifted
    assert out == torch_greedy(reference, ids, 140)
