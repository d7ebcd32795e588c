"""The real build: SmolLM2-135M-Instruct's shapes in the manifest, and greedy decoding with ONNX Runtime.

Builds the model into the configured model dir first if it is missing or out of date (about a minute).
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from inference import model_dir as md
from inference import model_kernels
from inference.modelbuild import ensure_model, inspect_model, read_manifest

pytestmark = pytest.mark.real_model

PARIS = 7042  # " Paris"
IM_START, ENDOFTEXT = 1, 0


@pytest.fixture(scope="module")
def real_dir():
    return ensure_model()


@pytest.fixture(scope="module")
def session(real_dir):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    model_kernels.register_beside(options, real_dir / md.MODEL_FILE)  # a build with our kernels needs them
    return ort.InferenceSession(str(real_dir / md.MODEL_FILE), options, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def tokenizer(real_dir):
    return Tokenizer.from_file(str(real_dir / md.TOKENIZER_FILE))


def greedy(session, ids: list[int], n: int) -> list[int]:
    """A minimal decode loop: prefill, then feed each present.* back as past_key_values.*."""
    pasts = [i.name for i in session.get_inputs() if i.name.startswith("past_key_values.")]
    names = [o.name for o in session.get_outputs()]
    past = {p: np.zeros((1, 3, 0, 64), dtype=np.float32) for p in pasts}  # [batch, kv_heads, past_len, head_dim]
    out, step, done = [], ids, 0
    for _ in range(n):
        feed = {
            "input_ids": np.array([step], dtype=np.int64),  # [1, n]
            "attention_mask": np.ones((1, done + len(step)), dtype=np.int64),  # [1, past + n]
            "position_ids": np.arange(done, done + len(step), dtype=np.int64)[None, :],  # [1, n]
            "logits_to_keep": np.array(1, dtype=np.int64),  # the last position's logits only
            **past,
        }
        result = dict(zip(names, session.run(None, feed)))
        done += len(step)
        step = [int(result["logits"][0, -1].argmax())]
        out.append(step[0])
        past = {p: result[p.replace("past_key_values", "present")] for p in pasts}
    return out


def test_real_model_is_up_to_date(real_dir):
    assert inspect_model(real_dir).up_to_date


def test_manifest_shapes(real_dir):
    m = read_manifest(real_dir)
    assert m["model_name"] == "SmolLM2-135M-Instruct"
    s = m["shapes"]
    assert (s["num_layers"], s["num_attention_heads"], s["num_key_value_heads"], s["head_dim"]) == (30, 9, 3, 64)
    assert (s["vocab_size"], s["hidden_size"], s["context_window"]) == (49152, 576, 8192)
    assert m["source"]["file"] == "SmolLM2-135M-Instruct.Q4_1.gguf" and m["source"]["license"] == "Apache-2.0"
    assert m["special_tokens"]["eos_token_ids"] == [2, 0]
    assert len(m["onnx"]["inputs"]) == 4 + 60 and len(m["onnx"]["outputs"]) == 1 + 60
    ops = m["onnx"]["op_counts"]
    if model_kernels.uses_kernels(m):  # 4 per layer (qkv, o, gate_up, down) and the tied Q8_0 head, nothing beside
        assert ops["MatMulGguf"] == 30 * 4 + 1 and "MatMul" not in ops and "MatMulNBits" not in ops
    else:  # 4 per layer; left: the fp32 LM head, per Q4_1 MatMul a block-offset MatMul, per input a block-sum MatMul
        assert ops["MatMulNBits"] == 30 * 4 and ops["MatMul"] == 1 + 30 * 4 + 30 * 4
    assert ops[model_kernels.attention_op_type(m)] == 30 and "RotaryEmbedding" not in ops
    assert ops["SkipSimplifiedLayerNormalization"] == 60 and ops["SimplifiedLayerNormalization"] == 1
    assert m["onnx"]["nodes"] < 750  # the export's 7426
    steps = m["onnx"]["transformations"]
    assert list(steps) == ["export", "norms", "attention", "mlp", "lossless", "head"]
    assert steps["attention"]["layers"] == 30 and steps["attention"]["rotary_table_positions"] == 8192


def test_manifest_records_the_lossless_quantization(real_dir):
    m = read_manifest(real_dir)
    q = m["quantization"]
    assert q["weights_bit_exact"] is True and q["requantized"]["matmuls"] == 0
    assert q["variant"] == "exact" and q["accuracy_level"] == {"Q4_1": 0} and q["gguf_types"] == ["Q4_1"]
    if model_kernels.uses_kernels(m):  # every block in our exact kernels; the embedding over the same 8-bit table
        kept = {"Q4_1 MatMulGguf": 120, "Q8_0 MatMulGguf": 1, "Q8_0 Gather": 1}
        assert q["method"] == "gguf-blocks-matmulgguf" and q["gguf_blocks_kept"] == kept
        assert q["matmul_gguf"] == {"Q4_1 exact": 120, "Q8_0 exact": 1} and q["offset_matmuls"] == 0
        assert q["weights_left"] == {}  # recipe 6: no fp32 table
        assert q["shared_tables"] == {"token_embd.weight": ["/model/embed_tokens/Gather", "/lm_head/MatMul"]}
    else:
        assert q["method"] == "gguf-q4_1-lossless-matmulnbits" and q["gguf_blocks_kept"] == {"Q4_1 MatMul": 120}
        assert q["offset_matmuls"] == 120 and q["block_sum_matmuls"] == 120
        assert q["weights_left"] == {"/model/embed_tokens/Gather": "Q8_0", "/lm_head/MatMul": "Q8_0"}  # fp32, exact


def test_tokenizer_adds_no_special_token(tokenizer):
    assert tokenizer.encode("The capital of France is").ids == [504, 3575, 282, 4649, 314]
    assert tokenizer.encode(" Paris").ids == [PARIS]


@pytest.mark.parametrize("prefix", [[], [IM_START], [ENDOFTEXT]], ids=["nothing", "im_start", "endoftext"])
def test_greedy_paris_dot(session, tokenizer, prefix):
    """What the fp32 export says too: " Paris." whatever the prompt starts with (recipe 1 said " capitalised…")."""
    ids = prefix + tokenizer.encode("The capital of France is", add_special_tokens=False).ids
    assert tokenizer.decode(greedy(session, ids, 2)) == " Paris."
