"""Gemma's recipe on a tiny random Gemma 3: the build, its manifest, and ONNX Runtime against transformers
past the sliding window (a few seconds: the model is tiny)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from inference import model_dir as md
from inference.modelbuild import read_manifest
from inference.modelbuild.models import GEMMA
from inference.modelbuild.tiny_gemma import SLIDING_WINDOW, TinyGemmaSource, build_tiny_gemma, random_model
from tests.inference.modelbuild.gemma_session import forward

from .conftest import RecordingProgress


@pytest.fixture(scope="module")
def tiny_gemma_dir(tmp_path_factory):
    return build_tiny_gemma(tmp_path_factory.mktemp("models") / "tiny-gemma", progress=RecordingProgress())


@pytest.fixture(scope="module")
def session(tiny_gemma_dir):
    return ort.InferenceSession(str(tiny_gemma_dir / md.MODEL_FILE), providers=["CPUExecutionProvider"])


def test_manifest_records_gemma_recipe(tiny_gemma_dir):
    m = read_manifest(tiny_gemma_dir)
    assert m["model_name"] == "tiny-random-gemma3"
    assert m["recipe_version"] == GEMMA.recipe_version
    assert m["architecture"] == "Gemma3ForCausalLM"
    assert m["variant"] is None  # no GGUF blocks, no variants
    assert m["quantization"]["method"] == "none: fp32 weights"
    assert list(m["onnx"]["transformations"]) == ["export", "head"]
    assert m["shapes"]["num_key_value_heads"] == 1 and m["shapes"]["head_dim"] == 16
    assert m["special_tokens"]["bos_token_id"] == 2 and m["special_tokens"]["eos_token_ids"] == [1, 5]
    assert m["special_tokens"]["tokenizer_adds_bos"] is True
    assert "position_ids" not in {i["name"] for i in m["onnx"]["inputs"]}


def test_second_build_is_a_hash_check(tiny_gemma_dir):
    progress = RecordingProgress()
    build_tiny_gemma(tiny_gemma_dir, progress=progress)
    assert len(progress.started) == 1 and any("up to date" in msg for msg in progress.messages)


def test_onnx_with_cache_equals_transformers_past_the_window(session):
    """Prefill 5 tokens, then decode one at a time to 3 windows' length: every position's logits are
    transformers' (fp32, same seed), so sliding and global layers, QK-norm, 1 + w norms and the
    embedding scale all came through the export."""
    import torch

    source = TinyGemmaSource()
    model = random_model(source.config, source.seed)
    rng = np.random.default_rng(0)
    ids = rng.integers(10, len(source.vocab.tokens), size=3 * SLIDING_WINDOW).tolist()
    with torch.no_grad():
        expected = model(torch.tensor([ids])).logits[0].numpy()  # [n, V]
    past = {i.name: np.zeros((1, 1, 0, 16), np.float32) for i in session.get_inputs() if i.name.startswith("past_key_values.")}
    logits, past = forward(session, ids[:5], past)
    rows = [logits]
    for token in ids[5:]:
        logits, past = forward(session, [token], past)
        rows.append(logits)
    got = np.concatenate(rows)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)
    assert (got.argmax(-1) == expected.argmax(-1)).all()


def test_tokenizer_is_the_gguf_builders(tiny_gemma_dir):
    tokenizer = Tokenizer.from_file(str(tiny_gemma_dir / md.TOKENIZER_FILE))
    encoding = tokenizer.encode("the capital  is\n\né")
    assert encoding.tokens == ["<bos>", "t", "he", "▁capital", "  ", "i", "s", "\n\n", "<0xC3>", "<0xA9>"]
    assert tokenizer.decode(encoding.ids) == "the capital  is\n\né"
