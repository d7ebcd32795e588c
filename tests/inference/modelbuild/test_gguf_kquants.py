"""Gemma's GGUF block types (Q5_0, Q4_K, Q6_K, and Q8_0) as MatMulNBits takes them, on random blocks:
the fp32 values equal gguf-py's dequantization bit for bit, and ONNX Runtime's MatMulNBits over the
packed codes computes x · wᵀ."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize
from onnx import TensorProto, helper, numpy_helper

from inference.modelbuild import gguf_blocks as gb

N, K = 24, 512  # two k-quant super-blocks along K
# Type → (bytes per block, weights per block, byte offsets of its fp16 scales within a block).
LAYOUT = {
    "Q8_0": (gb.Q8_0_BYTES, 32, (0,)),
    "Q5_0": (gb.Q5_0_BYTES, 32, (0,)),
    "Q4_K": (gb.Q4_K_BYTES, gb.SUPER, (0, 2)),
    "Q6_K": (gb.Q6_K_BYTES, gb.SUPER, (208,)),
}


def random_matrix(kind: str, seed: int = 0) -> gb.GgufMatrix:
    """Random bytes in ``kind``'s layout, with finite fp16 scales (every code pattern occurs)."""
    size, per_block, scale_at = LAYOUT[kind]
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, (N, K // per_block, size), dtype=np.uint8)
    for at in scale_at:
        scales = rng.uniform(1e-3, 2e-2, (N, K // per_block)).astype(np.float16)
        raw[..., at : at + 2] = scales[..., None].view(np.uint8).reshape(N, K // per_block, 2)
    return gb.GgufMatrix("w", kind, N, K, raw.reshape(N, -1))


@pytest.mark.parametrize("kind", sorted(LAYOUT))
def test_dequantized_equals_gguf(kind):
    matrix = random_matrix(kind)
    blocks = gb.blocks_of(matrix)
    expected = dequantize(matrix.raw, GGMLQuantizationType[kind]).reshape(N, K)
    assert np.array_equal(blocks.dequantized, expected)
    zero = 2 ** (blocks.bits - 1)
    rebuilt = np.repeat(blocks.scales, blocks.block, axis=1) * (blocks.codes.astype(np.float32) - zero)
    if blocks.offsets is not None:
        rebuilt = rebuilt + np.repeat(blocks.offsets, blocks.block, axis=1)
    np.testing.assert_allclose(rebuilt, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind", sorted(LAYOUT))
def test_matmulnbits_computes_the_product(kind):
    """MatMulNBits (fp32 activations) over the packed codes, plus x's block sums times the offsets."""
    blocks = gb.blocks_of(random_matrix(kind, seed=1))
    nodes = [
        helper.make_node(
            "MatMulNBits",
            ["x", "B", "scales"],
            ["main"],
            domain="com.microsoft",
            K=K,
            N=N,
            bits=blocks.bits,
            block_size=blocks.block,
            accuracy_level=0,
        )
    ]
    inits = [numpy_helper.from_array(gb.pack_codes(blocks), "B"), numpy_helper.from_array(blocks.scales.reshape(-1), "scales")]
    if blocks.offsets is None:
        nodes.append(helper.make_node("Identity", ["main"], ["y"]))
    else:
        indicator = (np.arange(K)[:, None] // blocks.block == np.arange(K // blocks.block)[None, :]).astype(np.float32)
        inits += [numpy_helper.from_array(indicator, "indicator"), numpy_helper.from_array(blocks.offsets.T.copy(), "offsets")]
        nodes += [
            helper.make_node("MatMul", ["x", "indicator"], ["sums"]),
            helper.make_node("MatMul", ["sums", "offsets"], ["shift"]),
            helper.make_node("Add", ["main", "shift"], ["y"]),
        ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, N])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(2).standard_normal((2, K)).astype(np.float32)
    (y,) = session.run(None, {"x": x})
    expected = x.astype(np.float64) @ blocks.dequantized.T.astype(np.float64)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["Q5_0", "Q6_K", "Q8_0"])
def test_8bit_blocks_split_into_two_nibble_halves_exactly(kind):
    blocks = gb.blocks_of(random_matrix(kind, seed=3))
    low, high = gb.split_nibbles(blocks)
    assert low.bits == high.bits == 4 and low.codes.max() <= 15 and high.codes.max() <= 15
    offset = np.repeat(np.float32(8) * blocks.scales, blocks.block, axis=1)
    assert np.array_equal(low.dequantized + high.dequantized + offset, blocks.dequantized)


def test_other_types_are_refused():
    with pytest.raises(ValueError, match="no MatMulNBits form"):
        gb.blocks_of(gb.GgufMatrix("w", "Q3_K", N, K, np.zeros((N, 1), np.uint8)))


@pytest.mark.parametrize("kind", ["Q8_0", "Q5_0"])
def test_split_head_after_the_slice_keeps_the_last_positions(tmp_path, kind):
    """Gemma's order: ``logits_to_keep`` slices the hidden states, then the head becomes two 4-bit halves
    plus an offset; keeping 1 position gives the last row of keeping all, which is x · wᵀ."""
    from gguf.quants import quantize

    from inference.modelbuild import head, lossless

    from .test_lossless import write_gguf

    qtype = GGMLQuantizationType[kind]
    vocab, hidden = 64, 96
    w = np.random.default_rng(4).standard_normal((vocab, hidden)).astype(np.float32)
    write_gguf(tmp_path / "m.gguf", {"output.weight": (w, qtype)})
    w = dequantize(quantize(w, qtype), qtype)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["logits"], name="/lm_head/MatMul")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "s", hidden])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "s", vocab])],
        [numpy_helper.from_array(w.T.copy(), "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    head.keep_last_positions(model)
    done = lossless.convert(model, tmp_path / "m.gguf", {"num_attention_heads": 1}, 0, (kind,), split_8bit=True)
    assert done.by_type == {f"{kind} MatMul": 1}
    assert [n.op_type for n in model.graph.node].count("MatMulNBits") == 2
    model.ir_version = 10
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(5).standard_normal((1, 5, hidden)).astype(np.float32)
    every = session.run(None, {"x": x, "logits_to_keep": np.array(0, np.int64)})[0]
    last = session.run(None, {"x": x, "logits_to_keep": np.array(1, np.int64)})[0]
    assert every.shape == (1, 5, vocab) and last.shape == (1, 1, vocab)
    np.testing.assert_allclose(last[0, 0], every[0, -1], rtol=0, atol=1e-5)
    np.testing.assert_allclose(every[0], x[0].astype(np.float64) @ w.T.astype(np.float64), rtol=1e-4, atol=1e-4)
