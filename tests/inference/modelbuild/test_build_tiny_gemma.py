"""Gemma's recipe on a tiny random Gemma 3: the build, its manifest, and ONNX Runtime against transformers
past the sliding window (a few seconds: the model is tiny)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from inference import model_dir as md
from inference import model_kernels
from inference.modelbuild import read_manifest
from inference.modelbuild.tiny_gemma import SLIDING_WINDOW, TinyGemmaSource, build_tiny_gemma, random_model
from inference.models import GEMMA
from tests.inference.modelbuild.gemma_session import forward

from .conftest import RecordingProgress


@pytest.fixture(scope="module")
def tiny_gemma_dir(tmp_path_factory):
    return build_tiny_gemma(tmp_path_factory.mktemp("models") / "tiny-gemma", progress=RecordingProgress())


@pytest.fixture(scope="module")
def session(tiny_gemma_dir):
    options = ort.SessionOptions()
    model_kernels.register_beside(options, tiny_gemma_dir / md.MODEL_FILE)  # our attention, where the build used it
    return ort.InferenceSession(str(tiny_gemma_dir / md.MODEL_FILE), options, providers=["CPUExecutionProvider"])


def test_manifest_records_gemma_recipe(tiny_gemma_dir):
    m = read_manifest(tiny_gemma_dir)
    assert m["model_name"] == "tiny-random-gemma3"
    assert m["recipe_version"] == GEMMA.recipe.recipe_version
    assert m["architecture"] == "Gemma3ForCausalLM"
    assert m["variant"] is None  # no GGUF blocks, no variants
    assert m["quantization"]["method"] == "none: fp32 weights"
    assert list(m["onnx"]["transformations"]) == ["export", "norms", "gemma_attention", "fast_gelu", "mlp", "head"]
    assert m["shapes"]["num_key_value_heads"] == 1 and m["shapes"]["head_dim"] == 16
    assert m["special_tokens"]["bos_token_id"] == 2 and m["special_tokens"]["eos_token_ids"] == [1, 5]
    assert m["special_tokens"]["tokenizer_adds_bos"] is True
    assert "position_ids" in {i["name"] for i in m["onnx"]["inputs"]}  # as the engine feeds every model


def test_graph_is_fused(tiny_gemma_dir):
    """One GroupQueryAttention per layer, the window on the sliding ones only, both rotary bases;
    the four norms per layer and the QK-norms fused; one FastGelu and one gate/up MatMul per layer;
    nothing left of the export's attention (its Softmax) or its masks."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(tiny_gemma_dir / md.MODEL_FILE))
    ops = {}
    for node in model.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    layers = TinyGemmaSource().config["num_hidden_layers"]
    attention = model_kernels.attention_op_type(read_manifest(tiny_gemma_dir))  # ours where the library built it
    assert ops[attention] == layers and ops["FastGelu"] == layers
    assert ops["SimplifiedLayerNormalization"] == 2 * layers + 2 * layers + 1  # q/k norms, post-attention/FFN, layer 0's input
    assert ops["SkipSimplifiedLayerNormalization"] == 2 * layers  # pre-FFN, the next input norm (the final norm last)
    assert ops["MatMul"] == 6 * layers + 1  # q, k, v, o, gate/up packed, down; the head
    assert not {"Softmax", "Tanh", "Pow", "Where", "Expand"} & set(ops)
    gqa = [n for n in model.graph.node if n.op_type == attention]
    windows = [next((a.i for a in n.attribute if a.name == "local_window_size"), -1) for n in gqa]
    assert windows == [SLIDING_WINDOW, -1, SLIDING_WINDOW]  # sliding, global, sliding
    assert [n.input[7] for n in gqa] == ["/gqa/local/cos_cache", "/gqa/global/cos_cache", "/gqa/local/cos_cache"]
    # the sliding layers' lengths come from sliding_attention_mask, the global layer's from attention_mask
    assert [n.input[5] for n in gqa] == ["/gqa/sliding/seqlens_k", "/gqa/seqlens_k", "/gqa/sliding/seqlens_k"]
    assert md.SLIDING_MASK in {i.name for i in model.graph.input}
    meta = {p.key: p.value for p in model.metadata_props}
    assert (meta[md.SLIDING_WINDOW_KEY], meta[md.SLIDING_LAYERS_KEY]) == (str(SLIDING_WINDOW), "0,2")
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    local, global_ = inits["/gqa/local/cos_cache"], inits["/gqa/global/cos_cache"]  # [P, head_dim / 2]
    assert local.shape == global_.shape == (256, 8)
    assert np.allclose(local[1], np.cos(10_000.0 ** -(np.arange(0, 16, 2) / 16)), atol=1e-6)
    assert np.allclose(global_[1], np.cos(1_000_000.0 ** -(np.arange(0, 16, 2) / 16)), atol=1e-6)


def test_second_build_is_a_hash_check(tiny_gemma_dir):
    progress = RecordingProgress()
    build_tiny_gemma(tiny_gemma_dir, progress=progress)
    assert len(progress.started) == 1 and any("up to date" in msg for msg in progress.messages)


def test_onnx_with_cache_equals_transformers_past_the_window(session):
    """Prefill a window and a half, then decode one at a time to 3 windows' length: every position's logits are
    transformers' (fp32, same seed), so sliding and global layers, QK-norm, 1 + w norms and the
    embedding scale all came through the fused graph (GroupQueryAttention's window included)."""
    import torch

    source = TinyGemmaSource()
    model = random_model(source.config, source.seed)
    rng = np.random.default_rng(0)
    ids = rng.integers(10, len(source.vocab.tokens), size=3 * SLIDING_WINDOW).tolist()
    with torch.no_grad():
        expected = model(torch.tensor([ids])).logits[0].numpy()  # [n, V]
    past = {i.name: np.zeros((1, 1, 0, 16), np.float32) for i in session.get_inputs() if i.name.startswith("past_key_values.")}
    prefill = SLIDING_WINDOW + SLIDING_WINDOW // 2
    logits, past = forward(session, ids[:prefill], past)
    rows = [logits]
    for token in ids[prefill:]:
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


def test_the_engine_decodes_the_fused_graph_as_transformers_does(tiny_gemma_dir):
    """The engine loads the fused Gemma as it loads SmolLM2 (position_ids, one cache buffer per layer
    and kind bound as past and present; the sliding layers' stop at window + slack and shift): a
    prefill past the window, then single steps, give transformers' logits at every position; the
    bench's bare session.run loop picks the same greedy tokens as the engine."""
    import torch

    from inference.bench.bare import BareSession
    from inference.runtime import load_runtime

    source = TinyGemmaSource()
    model = random_model(source.config, source.seed)
    ids = np.random.default_rng(1).integers(10, len(source.vocab.tokens), size=3 * SLIDING_WINDOW).tolist()
    with torch.no_grad():
        expected = model(torch.tensor([ids])).logits[0].numpy()  # [n, V]
    state = load_runtime(tiny_gemma_dir).decoder.new_state()
    prefill = SLIDING_WINDOW + 2
    rows = [state.append_tokens(ids[:prefill])[0]]  # [V]: the last position's
    for token in ids[prefill:]:
        rows.append(state.append_tokens([token])[0])
    np.testing.assert_allclose(np.stack(rows), expected[prefill - 1 :], rtol=0, atol=1e-4)  # [n - prefill + 1, V]

    greedy = [int(rows[-1].argmax())]
    for _ in range(SLIDING_WINDOW):
        greedy.append(int(state.append_tokens([greedy[-1]])[0].argmax()))
    bare = BareSession(tiny_gemma_dir, 1, "the capital", 4, lambda n: ids[:n])
    token, past = bare._forward(ids, {p: np.zeros(bare.kv_shape, np.float32) for p in bare.past_names})
    picked = [token]
    for _ in range(SLIDING_WINDOW):
        token, past = bare._forward([token], past)
        picked.append(token)
    assert picked == greedy
