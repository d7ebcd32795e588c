"""The offset-columns experiment (inference/modelbuild/offset_columns.py) on a graph lossless.convert made."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize

from inference.modelbuild import lossless, offset_columns

from .test_lossless import CONFIG, K, N, session, single_matmul_model, write_gguf

NAME = "/model/layers.0/mlp/up_proj/MatMul"


@pytest.fixture(scope="module")
def q4_1_weights() -> np.ndarray:
    """``[N, K]``, as the GGUF's Q4_1 blocks dequantize (rows of different ranges and offsets)."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((N, K)).astype(np.float32) * rng.uniform(0.05, 1.0, (N, 1)).astype(np.float32)
    w += rng.uniform(-0.5, 0.5, (N, 1)).astype(np.float32)  # offsets far from zero
    return w


def converted(tmp_path, weights: np.ndarray, level: int):
    write_gguf(tmp_path / "m.gguf", {"blk.0.ffn_up.weight": (weights, GGMLQuantizationType.Q4_1)})
    w = dequantize(quantize(weights, GGMLQuantizationType.Q4_1), GGMLQuantizationType.Q4_1)  # [N, K]
    model = single_matmul_model(NAME, w.T.copy())
    lossless.convert(model, tmp_path / "m.gguf", CONFIG, accuracy_level=level)
    return model, w


def test_the_side_path_becomes_extra_columns_and_12_bits_stay_close(tmp_path, q4_1_weights):
    model, w = converted(tmp_path, q4_1_weights, 0)
    assert [n.op_type for n in model.graph.node] == ["MatMulNBits", "MatMul", "MatMul", "Add"]
    assert offset_columns.rewrite(model, 12) == 1
    assert [n.op_type for n in model.graph.node] == ["MatMul", "Concat", "MatMulNBits"]
    k = [a.i for a in model.graph.node[2].attribute if a.name == "K"][0]
    assert k == K + 3 * 32  # three nibble copies of the 3 block sums, each padded to a block
    x = np.random.default_rng(1).standard_normal((1, 4, K)).astype(np.float32)
    got, expected = session(model).run(None, {"x": x})[0], x @ w.T.astype(np.float64)
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-3 * np.abs(expected).max())


def test_fewer_bits_lose_more(tmp_path, q4_1_weights):
    x = np.random.default_rng(2).standard_normal((1, 4, K)).astype(np.float32)
    errors = []
    for bits in (4, 8, 12):
        model, w = converted(tmp_path, q4_1_weights, 0)
        offset_columns.rewrite(model, bits)
        errors.append(float(np.abs(session(model).run(None, {"x": x})[0] - x @ w.T.astype(np.float64)).max()))
    assert errors[0] > errors[1] > errors[2]


def test_nibbles_rebuild_the_quantized_offsets():
    offsets = np.random.default_rng(3).standard_normal((5, 40)).astype(np.float32)  # 40 offsets: 2 blocks
    codes, scales = offset_columns.nibble_blocks(offsets, 8)
    assert codes.shape == (5, 4, 32) and scales.shape == (5, 4) and codes.max() <= 15
    values = (scales[..., None] * (codes.astype(np.float32) - 8)).reshape(5, 2, 2, 32).sum(axis=1).reshape(5, 64)
    np.testing.assert_allclose(values[:, :40], offsets, rtol=0, atol=np.abs(offsets).max() / 119)
    assert not values[:, 40:].any()


def test_fp32_layers_get_level_0(tmp_path, q4_1_weights):
    model, _ = converted(tmp_path, q4_1_weights, 4)
    offset_columns.rewrite(model, 12, fp32_layers=(0,))
    levels = [a.i for n in model.graph.node if n.op_type == "MatMulNBits" for a in n.attribute if a.name == "accuracy_level"]
    assert levels == [0]


def test_other_widths_are_refused(tmp_path, q4_1_weights):
    model, _ = converted(tmp_path, q4_1_weights, 0)
    with pytest.raises(ValueError, match="bits"):
        offset_columns.rewrite(model, 16)
