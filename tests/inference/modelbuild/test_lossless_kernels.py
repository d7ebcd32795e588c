"""The GGUF blocks → ``MatMulGguf`` rewrite (our kernels) on small synthetic tensors: the node, its bytes,
its mode by variant, and what it computes (a numpy reference of the op, and the real library when built)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize
from onnx import TensorProto, helper, numpy_helper

from inference import model_kernels
from inference.modelbuild import gguf_blocks as gb
from inference.modelbuild import lossless
from inference.models import SMOLLM2

from .test_lossless import CONFIG, K, N, single_matmul_model, write_gguf

BOTH = frozenset({"Q4_1", "Q8_0"})


@pytest.fixture(scope="module")
def weights() -> np.ndarray:
    """A float32 ``[N, K]`` matrix, rows of very different ranges."""
    rng = np.random.default_rng(10)
    return rng.standard_normal((N, K)).astype(np.float32) * rng.uniform(0.01, 1.0, (N, 1)).astype(np.float32)


def matmul_gguf_reference(x: np.ndarray, node: onnx.NodeProto, inits: dict[str, np.ndarray]) -> np.ndarray:
    """What ``MatMulGguf`` computes, in float64: ``x`` ``[.., K]`` times the node's blocks dequantized ``[N, K]``."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    k, n, kind = attrs["K"], attrs["N"], attrs["format"].decode()
    raw = inits[node.input[1]]  # [N, K / 32 * bytes per block]
    assert raw.dtype == np.uint8 and raw.shape == (n, gb.row_bytes(kind, k))
    w = gb.blocks_of(gb.GgufMatrix("reference", kind, n, k, raw)).dequantized
    return x.astype(np.float64) @ w.T.astype(np.float64)


needs_library = pytest.mark.skipif(
    model_kernels.library_now()["library"] is None, reason="the kernel library is not built here (scripts/env.sh)"
)


def kernel_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.op_type == model_kernels.OP_TYPE]


def attributes(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def initializers(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


@pytest.mark.parametrize(
    "kind, target, node_name, level, mode",
    [
        ("Q4_1", "blk.0.ffn_up.weight", "/model/layers.0/mlp/up_proj/MatMul", 0, "exact"),
        ("Q4_1", "blk.0.attn_q.weight", "/model/layers.0/self_attn/q_proj/MatMul", 4, "fast"),  # rows permuted
        ("Q8_0", "output.weight", "/lm_head/MatMul", 0, "exact"),
        ("Q8_0", "output.weight", "/lm_head/MatMul", 4, "fast"),
    ],
)
def test_a_matmul_becomes_one_matmul_gguf_over_the_stored_bytes(tmp_path, weights, kind, target, node_name, level, mode):
    qtype = getattr(GGMLQuantizationType, kind)
    write_gguf(tmp_path / "m.gguf", {target: (weights, qtype)})
    raw = quantize(weights, qtype)  # [N, K / 32 * bytes], GGUF row order
    w = dequantize(raw, qtype)
    if ".attn_q." in target:
        order = gb.unpermute_rows(N, CONFIG["num_attention_heads"])
        raw, w = raw[order], w[order]  # transformers' row order, as the export holds the weight
    model = single_matmul_model(node_name, w.T.copy())
    done = lossless.convert(model, tmp_path / "m.gguf", CONFIG, accuracy_level=level, kernel_formats=BOTH)
    (node,) = model.graph.node
    assert node.op_type == model_kernels.OP_TYPE and node.domain == model_kernels.DOMAIN
    assert attributes(node) == {"format": kind.encode(), "mode": mode.encode(), "K": K, "N": N}
    assert list(node.input)[0] == "x" and list(node.output) == ["y"]
    inits = initializers(model)
    assert np.array_equal(inits[node.input[1]], raw) and "W" not in inits  # the GGUF's bytes, nothing else
    assert (model_kernels.DOMAIN, model_kernels.OPSET_VERSION) in {(o.domain, o.version) for o in model.opset_import}
    assert done.kernel_ops == 1 and done.summary()["matmul_gguf"] == {f"{kind} {mode}": 1}
    assert done.offset_matmuls == [] and done.block_sum_matmuls == []
    x = np.random.default_rng(1).standard_normal((2, 5, K)).astype(np.float32)
    np.testing.assert_allclose(matmul_gguf_reference(x, node, inits), x @ w.T.astype(np.float64), rtol=1e-12, atol=1e-12)


def test_a_packed_projection_gets_its_tensors_rows_side_by_side(tmp_path, weights):
    """qkv_proj = attn_q | attn_k | attn_v: one node over the three tensors' rows, q and k un-permuted."""
    rng = np.random.default_rng(5)
    parts = {"attn_q": weights, "attn_k": weights[:16] * 0.5, "attn_v": rng.standard_normal((16, K)).astype(np.float32)}
    qtype = GGMLQuantizationType.Q4_1
    write_gguf(tmp_path / "m.gguf", {f"blk.0.{name}.weight": (w, qtype) for name, w in parts.items()})
    raws, ws = [], []
    for name, w in parts.items():
        raw = quantize(w, qtype)
        heads = {"attn_q": 2, "attn_k": 1}.get(name)
        order = gb.unpermute_rows(len(raw), heads) if heads else np.arange(len(raw))
        raws.append(raw[order])
        ws.append(dequantize(raw, qtype)[order])
    w = np.concatenate(ws)  # [N_q + N_k + N_v, K]
    model = single_matmul_model("/model/layers.0/self_attn/qkv_proj/MatMul", w.T.copy())
    lossless.convert(model, tmp_path / "m.gguf", CONFIG, accuracy_level=0, kernel_formats=BOTH)
    (node,) = kernel_nodes(model)
    inits = initializers(model)
    assert attributes(node)["N"] == len(w) and np.array_equal(inits[node.input[1]], np.concatenate(raws))
    x = rng.standard_normal((1, 3, K)).astype(np.float32)
    np.testing.assert_allclose(matmul_gguf_reference(x, node, inits), x @ w.T.astype(np.float64), rtol=1e-12, atol=1e-12)
    broken = single_matmul_model("/model/layers.0/self_attn/qkv_proj/MatMul", np.concatenate(ws[:2]).T.copy())
    with pytest.raises(lossless.WeightMismatchError, match="qkv_proj"):  # still checked against the export
        lossless.convert(broken, tmp_path / "m.gguf", CONFIG, accuracy_level=0, kernel_formats=BOTH)


def tied_model(table: np.ndarray) -> onnx.ModelProto:
    """The export's tied embedding and head: a Gather of the ``[V, K]`` table and a MatMul by its Transpose."""
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["embedded"], name=lossless.EMBEDDING_GATHER),
        helper.make_node("Transpose", ["table"], ["table_t"], name="/lm_head/Transpose", perm=[1, 0]),
        helper.make_node("MatMul", ["hidden", "table_t"], ["logits"], name=lossless.LM_HEAD_MATMUL),
    ]
    graph = helper.make_graph(
        nodes,
        "tied",
        [
            helper.make_tensor_value_info("ids", TensorProto.INT64, [1, "s"]),
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, "s", table.shape[1]]),
        ],
        [
            helper.make_tensor_value_info("embedded", TensorProto.FLOAT, [1, "s", table.shape[1]]),
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "s", table.shape[0]]),
        ],
        [numpy_helper.from_array(table, "table")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("variant", ["exact", "balanced", "fast"])
def test_the_tied_head_is_a_kernel_node_and_the_embedding_reads_the_8bit_table_in_every_variant(tmp_path, weights, variant):
    settings = SMOLLM2.recipe.variants[variant]
    write_gguf(tmp_path / "m.gguf", {"token_embd.weight": (weights, GGMLQuantizationType.Q8_0)})
    table = dequantize(quantize(weights, GGMLQuantizationType.Q8_0), GGMLQuantizationType.Q8_0)  # [V, K]
    model = tied_model(table)
    done = lossless.convert(
        model, tmp_path / "m.gguf", CONFIG, settings["accuracy_level"], tuple(settings["gguf_types"]), kernel_formats=BOTH
    )
    ops = [n.op_type for n in model.graph.node]
    (head,) = kernel_nodes(model)
    assert attributes(head)["mode"] == (b"exact" if variant == "exact" else b"fast")
    # with the kernels no variant keeps the fp32 table: the embedding reads the 8-bit one, whose rows
    # are the table's exactly
    assert "GatherBlockQuantized" in ops and "Gather" not in ops and "table" not in initializers(model)
    assert done.users["token_embd.weight"][-1] == lossless.LM_HEAD_MATMUL


@needs_library
def test_the_embedding_over_the_8bit_table_gives_the_fp32_table_rows_exactly(tmp_path, weights):
    settings = SMOLLM2.recipe.variants["exact"]
    write_gguf(tmp_path / "m.gguf", {"token_embd.weight": (weights, GGMLQuantizationType.Q8_0)})
    table = dequantize(quantize(weights, GGMLQuantizationType.Q8_0), GGMLQuantizationType.Q8_0)  # [V, K]
    model = tied_model(table)
    lossless.convert(
        model, tmp_path / "m.gguf", CONFIG, settings["accuracy_level"], tuple(settings["gguf_types"]), kernel_formats=BOTH
    )
    model.ir_version = 10
    options = ort.SessionOptions()
    model_kernels.register_library(options, "the test graph")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    ids = np.array([[0, len(table) - 1, 3, 3]], np.int64)
    hidden = np.zeros((1, 4, table.shape[1]), np.float32)
    embedded = session.run(["embedded"], {"ids": ids, "hidden": hidden})[0]
    assert np.array_equal(embedded, table[ids].astype(np.float32))  # bit for bit


def test_without_the_kernels_exact_keeps_the_fp32_table_for_the_embedding(tmp_path, weights):
    settings = SMOLLM2.recipe.variants["exact"]
    write_gguf(tmp_path / "m.gguf", {"token_embd.weight": (weights, GGMLQuantizationType.Q8_0)})
    table = dequantize(quantize(weights, GGMLQuantizationType.Q8_0), GGMLQuantizationType.Q8_0)  # [V, K]
    model = tied_model(table)
    lossless.convert(model, tmp_path / "m.gguf", CONFIG, settings["accuracy_level"], tuple(settings["gguf_types"]))
    ops = [n.op_type for n in model.graph.node]
    assert "Gather" in ops and "table" in initializers(model)  # one fp32 row read per token


def test_fast_fp32_tail_picks_exact_kernels_for_the_last_layers(tmp_path, weights):
    settings = SMOLLM2.recipe.variants["fast-fp32-tail"]
    qtype = GGMLQuantizationType.Q4_1
    write_gguf(tmp_path / "m.gguf", {f"blk.{i}.ffn_up.weight": (weights * (i + 1), qtype) for i in range(3)})
    ws = [dequantize(quantize(weights * (i + 1), qtype), qtype) for i in range(3)]
    names = [f"/model/layers.{i}/mlp/up_proj/MatMul" for i in range(3)]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", f"W{i}"], [f"y{i}"], name=name) for i, name in enumerate(names)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "s", K])],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, "s", N]) for i in range(3)],
        [numpy_helper.from_array(w.T.copy(), f"W{i}") for i, w in enumerate(ws)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    config = {**CONFIG, "num_hidden_layers": 3}
    lossless.convert(
        model, tmp_path / "m.gguf", config, settings["accuracy_level"], tuple(settings["gguf_types"]), kernel_formats=BOTH
    )
    assert [attributes(n)["mode"] for n in kernel_nodes(model)] == [b"fast", b"exact", b"exact"]


def test_formats_the_library_lacks_stay_matmulnbits(tmp_path, weights):
    write_gguf(tmp_path / "m.gguf", {"blk.0.ffn_up.weight": (weights, GGMLQuantizationType.Q4_1)})
    w = dequantize(quantize(weights, GGMLQuantizationType.Q4_1), GGMLQuantizationType.Q4_1)
    model = single_matmul_model("/model/layers.0/mlp/up_proj/MatMul", w.T.copy())
    done = lossless.convert(model, tmp_path / "m.gguf", CONFIG, accuracy_level=0, kernel_formats=frozenset({"Q8_0"}))
    assert done.kernel_ops == 0 and "MatMulNBits" in [n.op_type for n in model.graph.node]
    assert model_kernels.DOMAIN not in {o.domain for o in model.opset_import}


def test_row_bytes_are_whole_blocks():
    assert gb.row_bytes("Q4_1", 576) == 18 * 20 and gb.row_bytes("Q8_0", 576) == 18 * 34
    assert gb.row_bytes("Q4_K", 512) == 2 * 144 and gb.row_bytes("Q6_K", 256) == 210 and gb.row_bytes("Q5_0", 64) == 44
    with pytest.raises(ValueError, match="multiple"):
        gb.row_bytes("Q4_K", 96)
    with pytest.raises(ValueError, match="IQ2_XS"):
        gb.row_bytes("IQ2_XS", 256)


@needs_library
@pytest.mark.parametrize("kind", ["Q4_1", "Q8_0"])
@pytest.mark.parametrize("mode", ["exact", "fast"])
def test_the_library_computes_what_the_reference_does(tmp_path, weights, kind, mode):
    """The rewritten graph in ONNX Runtime with our library: exact to fp32 rounding, fast within int8's error."""
    qtype = getattr(GGMLQuantizationType, kind)
    write_gguf(tmp_path / "m.gguf", {"blk.0.ffn_up.weight": (weights, qtype)})
    w = dequantize(quantize(weights, qtype), qtype)
    model = single_matmul_model("/model/layers.0/mlp/up_proj/MatMul", w.T.copy())
    lossless.convert(model, tmp_path / "m.gguf", CONFIG, accuracy_level=0 if mode == "exact" else 4, kernel_formats=BOTH)
    model.ir_version = 10
    options = ort.SessionOptions()
    model_kernels.register_library(options, "the test graph")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(3).standard_normal((1, 7, K)).astype(np.float32)
    got = session.run(None, {"x": x})[0]
    expected = matmul_gguf_reference(x, kernel_nodes(model)[0], initializers(model))
    error = np.abs(got - expected).max() / np.abs(expected).max()
    assert error < (1e-6 if mode == "exact" else 0.02)


def random_blocks(kind: str, rows: int, k: int, seed: int) -> np.ndarray:
    """Valid ``kind`` rows ``[rows, bytes]`` of random bits, each block's fp16 scales set to small normal values
    (any bits are valid codes; a random fp16 scale could be inf or NaN)."""
    rng = np.random.default_rng(seed)
    size, per_block = gb.BLOCK_BYTES[kind]
    blocks = rng.integers(0, 256, (rows, k // per_block, size), dtype=np.uint8)
    scale_at = {"Q5_0": [0], "Q4_K": [0, 2], "Q6_K": [208]}[kind]  # byte offsets of the fp16 scales
    for at in scale_at:
        scales = rng.uniform(0.001, 0.01, blocks.shape[:2]).astype(np.float16)
        blocks[..., at : at + 2] = scales[..., None].view(np.uint8)
    return blocks.reshape(rows, -1)


@needs_library
@pytest.mark.parametrize("kind", ["Q5_0", "Q4_K", "Q6_K"])
@pytest.mark.parametrize("mode", ["exact", "fast"])
def test_gemmas_formats_through_the_library(tmp_path, kind, mode):
    """Gemma's GGUF formats (blocks of random bits, 512 weights a row) through the rewrite and our library."""
    if kind not in model_kernels.library_now()["formats"]:
        pytest.skip(f"this build of the library does not compute {kind}")
    k, n = 512, 40
    raw = random_blocks(kind, n, k, seed=len(kind) + len(mode))
    w = gb.blocks_of(gb.GgufMatrix("w", kind, n, k, raw)).dequantized  # [N, K]
    write_raw_gguf(tmp_path / "m.gguf", "blk.0.ffn_down.weight", raw, kind)
    model = single_matmul_model("/model/layers.0/mlp/down_proj/MatMul", w.T.copy())
    lossless.convert(
        model, tmp_path / "m.gguf", CONFIG, 0 if mode == "exact" else 4, permuted_qk=False, kernel_formats=frozenset({kind})
    )
    (node,) = kernel_nodes(model)
    assert np.array_equal(initializers(model)[node.input[1]], raw)
    model.ir_version = 10
    options = ort.SessionOptions()
    model_kernels.register_library(options, "the test graph")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(4).standard_normal((1, 3, k)).astype(np.float32)
    expected = x @ w.T.astype(np.float64)
    error = np.abs(session.run(None, {"x": x})[0] - expected).max() / np.abs(expected).max()
    assert error < (1e-6 if mode == "exact" else 0.02)


def write_raw_gguf(path, name: str, raw: np.ndarray, kind: str) -> None:
    """A GGUF holding one tensor of ``kind`` blocks ``raw`` as they are."""
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), "gemma3")
    writer.add_tensor(name, raw, raw_dtype=getattr(GGMLQuantizationType, kind))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
