"""Put the GGUF's own quantized weights into the fp32 ONNX export, bit for bit, as ``MatMulNBits``.

The export's weight MatMuls carry the GGUF's weights dequantized to fp32. Each one whose GGUF
tensor is Q4_1 or Q8_0 is replaced by ``MatMulNBits`` holding exactly the GGUF's bits:

- **Q8_0** (``w = d * q``) is 8-bit ``MatMulNBits`` with scale ``d`` and the default zero point
  (128, the stored bytes being ``q + 128``). The embedding ``Gather`` of a Q8_0 table becomes
  ``GatherBlockQuantized`` over the same bytes, so the tied embedding and LM head share one
  8-bit table instead of a 113 MB fp32 one.
- **Q4_1** (``w = d * q + m``) has a per-block offset ``m`` that ``MatMulNBits``' integer zero
  points cannot express. Its float zero points (``-m / d``) can, but ONNX Runtime's CPU kernel
  then dequantizes the whole weight on every call (~60× slower than the packed kernels, and
  ``accuracy_level`` is ignored), so the offset is split off instead, exactly:

      y[n] = Σ_k x[k] w[n, k] = Σ_k x[k] d (q - 8)  +  Σ_b (m + 8 d)[n, b] · Σ_{k in block b} x[k]

  The first term is a symmetric 4-bit ``MatMulNBits`` (scale ``d``, default zero point 8) over
  the GGUF's ``q``; the second a small fp32 MatMul of the input's block sums ``[.., K / 32]``
  with the blocks' offsets ``[K / 32, N]`` (one block-sum per distinct input, shared by q/k/v
  and by gate/up). The two are added.

Before anything is replaced, the GGUF weights, dequantized in numpy, must equal the export's fp32
initializer exactly (after undoing llama.cpp's q/k row permutation): a mismatch raises, so a wrong
mapping can never produce a model. Tensors of other GGUF types are left for the caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from inference.modelbuild.onnx_graph import drop_unused

from . import gguf_blocks as gb

# optimum's node names for the weight MatMuls → the GGUF tensor names (llama.cpp's llama layout).
LAYER_MATMUL = re.compile(r"^/model/layers\.(\d+)/(?:self_attn|mlp)/(\w+)/MatMul$")
GGUF_LAYER_NAMES = {
    "q_proj": "attn_q",
    "k_proj": "attn_k",
    "v_proj": "attn_v",
    "o_proj": "attn_output",
    "gate_proj": "ffn_gate",
    "up_proj": "ffn_up",
    "down_proj": "ffn_down",
}
LM_HEAD_MATMUL = "/lm_head/MatMul"
EMBEDDING_GATHER = "/model/embed_tokens/Gather"
MS_DOMAIN = "com.microsoft"
AXES = "/gguf/reduce_axes"  # [-1], shared by the block sums


class WeightMismatchError(RuntimeError):
    """A GGUF tensor, dequantized, is not the weight the export holds for the MatMul mapped to it."""


@dataclass
class Conversion:
    """What :func:`convert` did, for the manifest."""

    by_type: dict[str, int] = field(default_factory=dict)  # GGUF type → MatMuls converted
    converted: list[str] = field(default_factory=list)  # MatMul node names, as in the export
    offset_matmuls: list[str] = field(default_factory=list)  # the fp32 block-offset MatMuls added
    left: dict[str, str] = field(default_factory=dict)  # weights left as they were → their GGUF type
    users: dict[str, list[str]] = field(default_factory=dict)  # GGUF tensor → the nodes now holding its blocks

    def summary(self) -> dict[str, Any]:
        return {
            "gguf_blocks_kept": dict(sorted(self.by_type.items())),  # "<GGUF type> <op replaced>" → count
            "offset_matmuls": len(self.offset_matmuls),
            "shared_tables": {name: users for name, users in self.users.items() if len(users) > 1},
            "weights_left": dict(self.left),
        }


def gguf_name(node_name: str, matrices: dict[str, gb.GgufMatrix]) -> str | None:
    """The GGUF tensor behind a weight MatMul (or the embedding Gather) of the export (None if there is none)."""
    if node_name == EMBEDDING_GATHER:
        return "token_embd.weight"
    if node_name == LM_HEAD_MATMUL:
        return "output.weight" if "output.weight" in matrices else "token_embd.weight"  # tied
    match = LAYER_MATMUL.match(node_name)
    if match and match.group(2) in GGUF_LAYER_NAMES:
        return f"blk.{match.group(1)}.{GGUF_LAYER_NAMES[match.group(2)]}.weight"
    return None


def convert(
    model, gguf_path: Path, config: dict[str, Any], accuracy_level: int, gguf_types: tuple[str, ...] = ("Q4_1", "Q8_0")
) -> Conversion:
    """Replace, in place in the ``onnx.ModelProto`` ``model``, every weight MatMul (and the embedding Gather)
    whose GGUF tensor is of one of ``gguf_types`` (Q4_1 and/or Q8_0); the others are left as they are."""
    from onnx import helper, numpy_helper

    graph = model.graph
    matrices = gb.read_matrices(gguf_path)
    inits = {i.name: i for i in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output}
    heads = {"attn_q": config["num_attention_heads"], "attn_k": config.get("num_key_value_heads", config["num_attention_heads"])}
    result = Conversion()
    new_inits: list[Any] = []
    block_sums: dict[str, str] = {}  # input name → its block sums' name
    nodes: list[Any] = []

    def weight_of(node) -> np.ndarray | None:
        """The node's constant weight as ``[K, N]``: a MatMul's initializer, or a Transpose of one (the
        tied LM head); a Gather's table ``[N, K]``, transposed."""
        if node.op_type == "Gather":
            return numpy_helper.to_array(inits[node.input[0]]).T if node.input[0] in inits else None
        name = node.input[1]
        if name in inits:
            return numpy_helper.to_array(inits[name])
        producer = producers.get(name)
        if producer is not None and producer.op_type == "Transpose" and producer.input[0] in inits:
            return numpy_helper.to_array(inits[producer.input[0]]).T
        return None

    def block_sum(x: str, base: str) -> list[Any]:
        """Nodes computing ``x``'s sums over each block of 32 along its last axis (once per ``x``)."""
        if x in block_sums:
            return []
        shape, out = f"{base}/block_shape", f"{base}/block_sums"
        block_sums[x] = out
        new_inits.append(numpy_helper.from_array(np.array([0, 0, -1, gb.BLOCK], np.int64), shape))
        return [
            helper.make_node("Reshape", [x, shape], [f"{base}/blocks"], name=f"{base}/Reshape"),
            helper.make_node("ReduceSum", [f"{base}/blocks", AXES], [out], name=f"{base}/ReduceSum", keepdims=0),
        ]

    def packed(target: str, order: np.ndarray) -> tuple[str, np.ndarray, np.ndarray, np.ndarray | None]:
        """The GGUF tensor's packed ``B`` (one initializer per tensor, shared by its users), its scales ``d``,
        its weights dequantized (for the check), and for Q4_1 the blocks' offsets ``m + 8 d``."""
        matrix = matrices[target]
        b_name = f"/gguf/{target}/B"
        if matrix.kind == "Q8_0":
            d, q = (a[order] for a in gb.split_q8_0(matrix.raw))
            dequantized, b, offsets = gb.dequantize_q8_0(d, q), gb.pack_8bit, None
        else:
            d, m, q = (a[order] for a in gb.split_q4_1(matrix.raw))
            dequantized, b, offsets = gb.dequantize_q4_1(d, m, q), gb.pack_4bit, m + np.float32(8) * d
        if target not in result.users:
            result.users[target] = []
            new_inits.append(numpy_helper.from_array(b(q), b_name))
        return b_name, d, dequantized, offsets

    for node in graph.node:
        target = gguf_name(node.name, matrices) if node.op_type in ("MatMul", "Gather") else None
        matrix = matrices.get(target) if target else None
        weight = weight_of(node) if target else None
        kinds = {"Q8_0"} & set(gguf_types) if node.op_type == "Gather" else {"Q4_1", "Q8_0"} & set(gguf_types)
        if weight is None or matrix is None or matrix.kind not in kinds:
            if target:
                result.left[node.name] = matrix.kind if matrix else "absent"
            nodes.append(node)
            continue
        k, n = weight.shape
        if (matrix.rows, matrix.cols) != (n, k):
            raise WeightMismatchError(f"{node.name}: weight [{k}, {n}] but {target} is [{matrix.cols}, {matrix.rows}]")
        order = np.arange(n)
        for kind, count in heads.items():
            if f".{kind}." in target:
                order = gb.unpermute_rows(n, count)
        base = node.name.rsplit("/", 1)[0] + "/gguf"
        b_name, d, dequantized, offsets = packed(target, order)
        _check_equal(node.name, target, dequantized, weight)
        bits = 8 if matrix.kind == "Q8_0" else 4
        if node.op_type == "Gather":
            nodes += _gather_block_quantized(node, b_name, d, base, bits, new_inits)
        else:
            x, y = node.input[0], node.output[0]
            main_out = y if offsets is None else f"{base}/MatMulNBits_output_0"
            new_inits.append(numpy_helper.from_array(d.reshape(-1), f"{base}/scales"))
            nodes.append(
                helper.make_node(
                    "MatMulNBits", [x, b_name, f"{base}/scales"], [main_out], name=f"{base}/MatMulNBits",
                    domain=MS_DOMAIN, K=k, N=n, bits=bits, block_size=gb.BLOCK, accuracy_level=accuracy_level,
                )
            )
            if offsets is not None:  # Q4_1: add the block sums of x times the blocks' offsets
                new_inits.append(numpy_helper.from_array(offsets.T.copy(), f"{base}/offsets"))  # [K / 32, N]
                nodes += block_sum(x, f"/gguf/block_sums/{len(block_sums)}")
                offset_name = f"{base}/offsets/MatMul"
                nodes.append(helper.make_node("MatMul", [block_sums[x], f"{base}/offsets"], [f"{base}/offsets_output_0"], name=offset_name))
                nodes.append(helper.make_node("Add", [main_out, f"{base}/offsets_output_0"], [y], name=f"{base}/Add"))
                result.offset_matmuls.append(offset_name)
        result.converted.append(node.name)
        result.users[target].append(node.name)
        key = f"{matrix.kind} {node.op_type}"
        result.by_type[key] = result.by_type.get(key, 0) + 1

    if block_sums:
        new_inits.append(numpy_helper.from_array(np.array([-1], np.int64), AXES))
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(new_inits)
    drop_unused(model)
    if not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return result


def _gather_block_quantized(node, b_name: str, d: np.ndarray, base: str, bits: int, new_inits: list[Any]) -> list[Any]:
    """``GatherBlockQuantized`` over the packed table ``[N, K / 32, 32 * bits / 8]`` (shared with the tied LM
    head), then a Reshape of its ``[.., K / 32, 32]`` rows back to ``[.., K]``."""
    from onnx import helper, numpy_helper

    rows, blocks = d.shape
    new_inits.append(numpy_helper.from_array(d.reshape(rows, blocks, 1), f"{base}/scales"))
    new_inits.append(numpy_helper.from_array(np.array([0, 0, blocks * gb.BLOCK], np.int64), f"{base}/row_shape"))
    blocked = f"{base}/GatherBlockQuantized_output_0"
    return [
        helper.make_node(
            "GatherBlockQuantized", [b_name, node.input[1], f"{base}/scales"], [blocked], name=f"{base}/GatherBlockQuantized",
            domain=MS_DOMAIN, bits=bits, block_size=gb.BLOCK, gather_axis=0, quantize_axis=2,
        ),
        helper.make_node("Reshape", [blocked, f"{base}/row_shape"], [node.output[0]], name=f"{base}/Reshape"),
    ]


def _check_equal(node_name: str, target: str, dequantized: np.ndarray, weight: np.ndarray) -> None:
    """``dequantized`` ``[N, K]`` must be the export's ``weight`` ``[K, N]`` exactly."""
    if not np.array_equal(dequantized, weight.T):
        diff = float(np.abs(dequantized - weight.T).max())
        raise WeightMismatchError(f"{node_name}: {target} dequantized differs from the export's weight (max |diff| {diff:g})")
