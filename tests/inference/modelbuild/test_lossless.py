"""The GGUF blocks → MatMulNBits conversion on small synthetic tensors: layouts, exactness, the graph rewrite."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.quants import dequantize, quantize
from onnx import TensorProto, helper, numpy_helper

from inference.modelbuild import gguf_blocks as gb
from inference.modelbuild import lossless
from inference.models import SMOLLM2

K, N = 96, 48  # three blocks of 32 along K


@pytest.fixture(scope="module")
def weights() -> np.ndarray:
    """A float32 ``[N, K]`` matrix, rows of very different ranges, one all-zero block (d == 0)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((N, K)).astype(np.float32) * rng.uniform(0.01, 1.0, (N, 1)).astype(np.float32)
    w[3, 32:64] = 0.0
    return w


def session(model: onnx.ModelProto) -> ort.InferenceSession:
    model.ir_version = 10
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_q4_1_split_and_dequantize_match_gguf(weights):
    raw = quantize(weights, GGMLQuantizationType.Q4_1)
    d, m, q = gb.split_q4_1(raw)
    assert d.shape == m.shape == (N, K // 32) and q.shape == (N, K) and q.max() <= 15
    assert np.array_equal(gb.dequantize_q4_1(d, m, q), dequantize(raw, GGMLQuantizationType.Q4_1))


def test_q8_0_split_and_dequantize_match_gguf(weights):
    raw = quantize(weights, GGMLQuantizationType.Q8_0)
    d, q = gb.split_q8_0(raw)
    assert np.array_equal(gb.dequantize_q8_0(d, q), dequantize(raw, GGMLQuantizationType.Q8_0))


def test_pack_4bit_puts_even_elements_in_the_low_nibble():
    q = np.arange(32, dtype=np.uint8)[None, :] % 16
    packed = gb.pack_4bit(q)
    assert packed.shape == (1, 1, 16)
    assert packed[0, 0, 0] == 0x10 and packed[0, 0, 1] == 0x32 and packed[0, 0, 8] == 0x10


def test_unpermute_rows_undoes_llama_cpp_permutation():
    heads, rows = 3, 3 * 8
    original = np.arange(rows)
    permuted = original.reshape(heads, 2, rows // heads // 2).swapaxes(1, 2).reshape(-1)  # llama.cpp's converter
    assert np.array_equal(permuted[gb.unpermute_rows(rows, heads)], original)


def single_matmul_model(name: str, weight_kn: np.ndarray) -> onnx.ModelProto:
    node = helper.make_node("MatMul", ["x", "W"], ["y"], name=name)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "s", weight_kn.shape[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "s", weight_kn.shape[1]])],
        [numpy_helper.from_array(weight_kn, "W")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def write_gguf(path, tensors: dict[str, tuple[np.ndarray, GGMLQuantizationType]]) -> None:
    writer = GGUFWriter(str(path), "llama")
    for name, (w, qtype) in tensors.items():
        raw = quantize(w, qtype)
        writer.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


CONFIG = {"num_attention_heads": 2, "num_key_value_heads": 1}


@pytest.mark.parametrize(
    "kind, target, node_name",
    [
        ("Q4_1", "blk.0.ffn_up.weight", "/model/layers.0/mlp/up_proj/MatMul"),
        ("Q4_1", "blk.0.attn_q.weight", "/model/layers.0/self_attn/q_proj/MatMul"),  # rows permuted
        ("Q8_0", "output.weight", "/lm_head/MatMul"),
    ],
)
def test_convert_keeps_the_gguf_blocks_exactly(tmp_path, weights, kind, target, node_name):
    qtype = getattr(GGMLQuantizationType, kind)
    write_gguf(tmp_path / "m.gguf", {target: (weights, qtype)})
    w = dequantize(quantize(weights, qtype), qtype)  # [N, K] in GGUF row order
    if ".attn_q." in target:
        w = w[gb.unpermute_rows(N, CONFIG["num_attention_heads"])]  # what transformers' loader does
    model = single_matmul_model(node_name, w.T.copy())
    done = lossless.convert(model, tmp_path / "m.gguf", CONFIG, accuracy_level=0)
    assert done.converted == [node_name] and done.by_type == {f"{kind} MatMul": 1}
    assert [n.op_type for n in model.graph.node if n.op_type == "MatMulNBits"] == ["MatMulNBits"]
    assert "W" not in {i.name for i in model.graph.initializer}
    x = np.random.default_rng(1).standard_normal((1, 5, K)).astype(np.float32)
    got = session(model).run(None, {"x": x})[0]
    expected = x @ w.T.astype(np.float64)
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-5 * np.abs(expected).max())


def test_accuracy_level_4_stays_close(tmp_path, weights):
    write_gguf(tmp_path / "m.gguf", {"blk.0.ffn_up.weight": (weights, GGMLQuantizationType.Q4_1)})
    w = dequantize(quantize(weights, GGMLQuantizationType.Q4_1), GGMLQuantizationType.Q4_1)
    model = single_matmul_model("/model/layers.0/mlp/up_proj/MatMul", w.T.copy())
    lossless.convert(model, tmp_path / "m.gguf", CONFIG, accuracy_level=4)
    x = np.random.default_rng(2).standard_normal((1, 3, K)).astype(np.float32)
    got, expected = session(model).run(None, {"x": x})[0], x @ w.T
    assert np.abs(got - expected).max() < 0.02 * np.abs(expected).max()  # int8 activations inside the kernel


def test_convert_refuses_a_weight_that_is_not_the_gguf_tensor(tmp_path, weights):
    write_gguf(tmp_path / "m.gguf", {"blk.0.ffn_up.weight": (weights, GGMLQuantizationType.Q4_1)})
    w = dequantize(quantize(weights, GGMLQuantizationType.Q4_1), GGMLQuantizationType.Q4_1)
    w[0, 0] += 1e-3
    model = single_matmul_model("/model/layers.0/mlp/up_proj/MatMul", w.T.copy())
    with pytest.raises(lossless.WeightMismatchError, match="up_proj"):
        lossless.convert(model, tmp_path / "m.gguf", CONFIG, accuracy_level=0)


def test_convert_leaves_other_types_alone(tmp_path, weights):
    write_gguf(tmp_path / "m.gguf", {"blk.0.ffn_up.weight": (weights, GGMLQuantizationType.F16)})
    w = weights.astype(np.float16).astype(np.float32)
    model = single_matmul_model("/model/layers.0/mlp/up_proj/MatMul", w.T.copy())
    done = lossless.convert(model, tmp_path / "m.gguf", CONFIG, accuracy_level=4)
    assert done.converted == [] and done.left == {"/model/layers.0/mlp/up_proj/MatMul": "F16"}
    assert [n.op_type for n in model.graph.node] == ["MatMul"]


def test_convert_keeps_only_the_types_asked_for(tmp_path, weights):
    write_gguf(tmp_path / "m.gguf", {"output.weight": (weights, GGMLQuantizationType.Q8_0)})
    w = dequantize(quantize(weights, GGMLQuantizationType.Q8_0), GGMLQuantizationType.Q8_0)
    model = single_matmul_model("/lm_head/MatMul", w.T.copy())
    done = lossless.convert(model, tmp_path / "m.gguf", CONFIG, accuracy_level=0, gguf_types=("Q4_1",))
    assert done.left == {"/lm_head/MatMul": "Q8_0"} and [n.op_type for n in model.graph.node] == ["MatMul"]


def test_a_packed_projection_gets_its_gguf_tensors_side_by_side(tmp_path, weights):
    """qkv_proj = attn_q | attn_k | attn_v (q and k rows un-permuted each with its own head count),
    one MatMulNBits and one offset path, the result equal to the three products concatenated."""
    config = {"num_attention_heads": 2, "num_key_value_heads": 1}
    rng = np.random.default_rng(5)
    parts = {"attn_q": weights, "attn_k": weights[:16] * 0.5, "attn_v": rng.standard_normal((16, K)).astype(np.float32)}
    qtype = GGMLQuantizationType.Q4_1
    write_gguf(tmp_path / "m.gguf", {f"blk.0.{name}.weight": (w, qtype) for name, w in parts.items()})
    dequantized = []
    for name, w in parts.items():
        d = dequantize(quantize(w, qtype), qtype)
        heads = {"attn_q": 2, "attn_k": 1}.get(name)
        dequantized.append(d[gb.unpermute_rows(len(d), heads)] if heads else d)
    w = np.concatenate(dequantized)  # [N_q + N_k + N_v, K]
    model = single_matmul_model("/model/layers.0/self_attn/qkv_proj/MatMul", w.T.copy())
    done = lossless.convert(model, tmp_path / "m.gguf", config, accuracy_level=0)
    assert done.by_type == {"Q4_1 MatMul": 1} and len(done.offset_matmuls) == 1 and len(done.block_sum_matmuls) == 1
    assert list(done.users) == ["blk.0.attn_q.weight+blk.0.attn_k.weight+blk.0.attn_v.weight"]
    x = rng.standard_normal((1, 4, K)).astype(np.float32)
    got = session(model).run(None, {"x": x})[0]
    expected = x @ w.T.astype(np.float64)
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-5 * np.abs(expected).max())
    broken = single_matmul_model("/model/layers.0/self_attn/qkv_proj/MatMul", np.concatenate(dequantized[:2]).T.copy())
    with pytest.raises(lossless.WeightMismatchError, match="qkv_proj"):
        lossless.convert(broken, tmp_path / "m.gguf", config, accuracy_level=0)


def test_level_of_reads_projection_then_layer_then_kind():
    levels = {"Q4_1": 4, "Q8_0": 4, "layer -1": 0, "layer 0": 1, "down_proj": 2}
    up = "/model/layers.{}/mlp/up_proj/MatMul"
    assert [lossless.level_of(up.format(i), "Q4_1", levels, 3) for i in range(3)] == [1, 4, 0]
    assert lossless.level_of("/model/layers.2/mlp/down_proj/MatMul", "Q4_1", levels, 3) == 2  # projection first
    assert lossless.level_of(lossless.LM_HEAD_MATMUL, "Q8_0", levels, 3) == 4  # the head is no layer


def test_fast_fp32_tail_computes_the_last_layer_exactly(tmp_path, weights):
    """The variant's settings on a 3-layer model: layer 0 with int8 activations (close), layer 2, the last,
    with fp32 activations (the fp32 product of the GGUF's weights, as `exact` computes it)."""
    settings = SMOLLM2.recipe.variants["fast-fp32-tail"]
    qtype = GGMLQuantizationType.Q4_1
    rng = np.random.default_rng(7)
    parts = [weights, rng.standard_normal((N, K)).astype(np.float32)]
    write_gguf(tmp_path / "m.gguf", {f"blk.{i}.ffn_up.weight": (w, qtype) for i, w in zip((0, 2), parts)})
    ws = [dequantize(quantize(w, qtype), qtype) for w in parts]  # [N, K] each
    names = [f"/model/layers.{i}/mlp/up_proj/MatMul" for i in (0, 2)]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", f"W{i}"], [f"y{i}"], name=name) for i, name in enumerate(names)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "s", K])],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, "s", N]) for i in range(2)],
        [numpy_helper.from_array(w.T.copy(), f"W{i}") for i, w in enumerate(ws)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    config = {**CONFIG, "num_hidden_layers": 3}
    done = lossless.convert(model, tmp_path / "m.gguf", config, settings["accuracy_level"], tuple(settings["gguf_types"]))
    assert done.converted == names
    levels = [a.i for n in model.graph.node if n.op_type == "MatMulNBits" for a in n.attribute if a.name == "accuracy_level"]
    assert levels == [4, 0]
    x = rng.standard_normal((1, 5, K)).astype(np.float32)
    y0, y1 = session(model).run(None, {"x": x})
    exact0, exact1 = (x @ w.T.astype(np.float64) for w in ws)
    np.testing.assert_allclose(y1, exact1, rtol=0, atol=2e-5 * np.abs(exact1).max())
    assert np.abs(y0 - exact0).max() < 0.02 * np.abs(exact0).max()  # int8 activations inside the kernel
    assert np.abs(y0 - exact0).max() > 2e-5 * np.abs(exact0).max()  # and not the fp32 product: level 4 did run
