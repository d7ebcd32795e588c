"""Put the GGUF's own quantized weights into the fp32 ONNX export, bit for bit, as ``MatMulNBits``.

The export's weight MatMuls carry the GGUF's weights dequantized to fp32. Each one whose GGUF
tensor is of a type the variant names (Q4_1, Q8_0 for SmolLM2; Q8_0, Q5_0, Q4_K, Q6_K for Gemma)
is replaced by ``MatMulNBits`` holding exactly the GGUF's values (``gguf_blocks.blocks_of``):

- **Q8_0** (``w = d * q``) is 8-bit ``MatMulNBits`` with scale ``d`` and the default zero point
  (128, the stored bytes being ``q + 128``). The embedding ``Gather`` of a Q8_0 table becomes
  ``GatherBlockQuantized`` over the same bytes, so the tied embedding and LM head share one
  8-bit table instead of a 113 MB fp32 one.
- **Q4_1** (``w = d * q + m``) has a per-block offset ``m`` that ``MatMulNBits``' integer zero
  points cannot express. Its float zero points (``-m / d``) can, but ONNX Runtime's CPU kernel
  then dequantizes the whole weight on every call (~10–60× slower than the packed kernels, and
  ``accuracy_level`` is ignored; still so in 1.32), so the offset is split off instead, exactly:

      y[n] = Σ_k x[k] w[n, k] = Σ_k x[k] d (q - 8)  +  Σ_b (m + 8 d)[n, b] · Σ_{k in block b} x[k]

  The first term is a symmetric 4-bit ``MatMulNBits`` (scale ``d``, default zero point 8) over
  the GGUF's ``q``; the second a small fp32 MatMul of the input's block sums ``[.., K / 32]``
  with the blocks' offsets ``[K / 32, N]``. The block sums are one MatMul of the input by a
  0/1 block indicator ``[K, K / 32]``, computed once per distinct input (shared by the packed
  q/k/v and gate/up projections). The two terms are added.

- **Q5_0** (``w = d (q - 16)``, 5 bits) is 8-bit ``MatMulNBits`` over ``q - 16 + 128``, scale ``d``.
- **Q6_K** (``w = (d · scale) (q - 32)`` per 16) is 8-bit ``MatMulNBits`` with blocks of 16, scale
  ``d · scale`` (computed in fp32 as gguf-py does).
- **Q4_K** (``w = (d · sc) q - dmin · mn`` per 32) is Q4_1's form: scale ``d · sc``, offset ``-dmin · mn``.

A packed projection (``qkv_proj``, ``gate_up_proj``: see ``attention.py`` and ``mlp.py``) maps to
its GGUF tensors side by side (``attn_q`` | ``attn_k`` | ``attn_v``, ``ffn_gate`` | ``ffn_up``):
their blocks are concatenated along the output dimension, still bit for bit.

**With our kernels** (``kernel_formats``: the formats ``inference.kernels`` computes, empty without the
library) every weight MatMul whose GGUF type the library computes becomes one ``MatMulGguf`` node
(domain ``playground.kernels``) holding the GGUF's block bytes exactly as stored (``GgufMatrix.raw``,
rows side by side for a packed projection, q/k rows un-permuted): no offset side path, no
re-layout. Its ``mode`` follows the MatMul's ``accuracy_level`` in the variant: 0 → ``exact`` (fp32
activations and accumulation), 4 → ``fast`` (int8 activations per block of 32, llama.cpp's
arithmetic). The tied head is such a node too (Q8_0) whatever ``gguf_types`` says, and the embedding
``Gather`` of a Q8_0 table becomes ``GatherBlockQuantized`` over its 8-bit codes (the rows it gives
are the fp32 table's exactly: ``d · q`` in fp32), so no variant built with the kernels carries the
fp32 table (SmolLM2's `exact`: 113 MB less in ``model.onnx`` and in memory). Without the library it
stays as ``gguf_types`` makes it (an `exact` fallback build keeps its fp32 table beside the fp32 head).

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

from inference.model_kernels import DOMAIN as KERNELS_DOMAIN
from inference.model_kernels import OP_TYPE as KERNEL_OP
from inference.model_kernels import OPSET_VERSION as KERNELS_OPSET
from inference.modelbuild.onnx_graph import drop_unused

from . import gguf_blocks as gb

# optimum's node names for the weight MatMuls → the GGUF tensor names (llama.cpp's llama layout).
LAYER_MATMUL = re.compile(r"^/model/layers\.(\d+)/(?:self_attn|mlp)/(\w+)/MatMul$")
GGUF_LAYER_NAMES: dict[str, tuple[str, ...]] = {
    "q_proj": ("attn_q",),
    "k_proj": ("attn_k",),
    "v_proj": ("attn_v",),
    "qkv_proj": ("attn_q", "attn_k", "attn_v"),  # packed by attention.fuse
    "o_proj": ("attn_output",),
    "gate_proj": ("ffn_gate",),
    "up_proj": ("ffn_up",),
    "gate_up_proj": ("ffn_gate", "ffn_up"),  # packed by mlp.pack_gate_up
    "down_proj": ("ffn_down",),
}
LM_HEAD_MATMUL = "/lm_head/MatMul"
EMBEDDING_GATHER = "/model/embed_tokens/Gather"
MS_DOMAIN = "com.microsoft"
KINDS = ("Q4_1", "Q8_0", "Q5_0", "Q4_K", "Q6_K")  # the GGUF types with an exact MatMulNBits form (gguf_blocks)


class WeightMismatchError(RuntimeError):
    """A GGUF tensor, dequantized, is not the weight the export holds for the MatMul mapped to it."""


@dataclass
class Conversion:
    """What :func:`convert` did, for the manifest."""

    by_type: dict[str, int] = field(default_factory=dict)  # GGUF type → MatMuls converted
    converted: list[str] = field(default_factory=list)  # MatMul node names, as in the export
    offset_matmuls: list[str] = field(default_factory=list)  # the fp32 block-offset MatMuls added
    left: dict[str, str] = field(default_factory=dict)  # weights left as they were → their GGUF type
    users: dict[str, list[str]] = field(default_factory=dict)  # GGUF tensor(s) → the nodes now holding their blocks
    block_sum_matmuls: list[str] = field(default_factory=list)  # one per distinct input of a Q4_1 MatMul
    kernel_modes: dict[str, int] = field(default_factory=dict)  # "<GGUF type> <mode>" → MatMulGguf nodes

    def summary(self) -> dict[str, Any]:
        return {
            "gguf_blocks_kept": dict(sorted(self.by_type.items())),  # "<GGUF type> <op replaced>" → count
            "offset_matmuls": len(self.offset_matmuls),
            "block_sum_matmuls": len(self.block_sum_matmuls),
            "shared_tables": {name: users for name, users in self.users.items() if len(users) > 1},
            "weights_left": dict(self.left),
            **({"matmul_gguf": dict(sorted(self.kernel_modes.items()))} if self.kernel_modes else {}),
        }

    @property
    def kernel_ops(self) -> int:
        """How many ``MatMulGguf`` nodes the graph now holds."""
        return sum(self.kernel_modes.values())


def projection_of(node_name: str) -> str:
    """``qkv_proj``, ``o_proj``, ``gate_up_proj``, ``down_proj``, … for a layer's MatMul; ``lm_head`` for the head."""
    if node_name == LM_HEAD_MATMUL:
        return "lm_head"
    match = LAYER_MATMUL.match(node_name)
    return match.group(2) if match else node_name


def level_of(node_name: str, kind: str, levels: dict[str, int], num_layers: int | None) -> int:
    """The ``accuracy_level`` of a weight MatMul: its projection's (``"down_proj"``), else its layer's
    (``"layer 28"``, or ``"layer -2"`` counted from the end), else its GGUF kind's."""
    projection = projection_of(node_name)
    if projection in levels:
        return levels[projection]
    match = LAYER_MATMUL.match(node_name)
    if match:
        layer = int(match.group(1))
        for key in (f"layer {layer}", f"layer {layer - num_layers}" if num_layers else None):
            if key in levels:
                return levels[key]
    return levels[kind]


def gguf_names(node_name: str, matrices: dict[str, gb.GgufMatrix]) -> tuple[str, ...]:
    """The GGUF tensors behind a weight MatMul (or the embedding Gather) of the export, side by side
    for a packed projection (empty if there are none)."""
    if node_name == EMBEDDING_GATHER:
        return ("token_embd.weight",)
    if node_name == LM_HEAD_MATMUL:
        return ("output.weight",) if "output.weight" in matrices else ("token_embd.weight",)  # tied
    match = LAYER_MATMUL.match(node_name)
    if match and match.group(2) in GGUF_LAYER_NAMES:
        return tuple(f"blk.{match.group(1)}.{part}.weight" for part in GGUF_LAYER_NAMES[match.group(2)])
    return ()


def convert(
    model,
    gguf_path: Path,
    config: dict[str, Any],
    accuracy_level: int | dict[str, int],
    gguf_types: tuple[str, ...] = ("Q4_1", "Q8_0"),
    permuted_qk: bool = True,
    split_8bit: bool = False,
    kernel_formats: frozenset[str] = frozenset(),
) -> Conversion:
    """Replace, in place in the ``onnx.ModelProto`` ``model``, every weight MatMul (and the embedding Gather)
    whose GGUF tensors are all of one of ``gguf_types`` (Q4_1 and/or Q8_0); the others are left as they are.

    ``accuracy_level``: MatMulNBits' ``accuracy_level``, one for every kind, or a mapping by GGUF kind
    (``{"Q4_1": 0, "Q8_0": 4}``) that may also name projections (``"down_proj"``, ``"lm_head"``, …)
    or layers (``"layer 3"``, or ``"layer -1"`` counted from the end, with ``config``'s
    ``num_hidden_layers``) whose MatMuls take another level: see :func:`level_of`. ``permuted_qk``:
    the GGUF holds attn_q/attn_k in llama.cpp's rotary-interleaved row order (its llama layout; not
    Gemma's). ``split_8bit``: 8-bit blocks become two 4-bit MatMulNBits and an offset term (exact;
    ONNX Runtime's 8-bit kernel with fp32 activations dequantizes the whole weight on every call).
    ``kernel_formats``: the GGUF types our kernel library computes; MatMuls of those types become
    ``MatMulGguf`` (see the module docstring), whatever ``gguf_types`` and ``split_8bit`` say."""
    from onnx import TensorProto, helper, numpy_helper  # the build extra: imported by a build only

    levels = accuracy_level if isinstance(accuracy_level, dict) else {kind: accuracy_level for kind in ("Q4_1", "Q8_0")}
    levels = {**dict.fromkeys(KINDS, 0), **levels}  # kinds a variant does not convert need no level
    graph = model.graph
    matrices = gb.read_matrices(gguf_path)
    inits = {i.name: i for i in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output}
    heads = {"attn_q": config["num_attention_heads"], "attn_k": config.get("num_key_value_heads", config["num_attention_heads"])}
    if not permuted_qk:
        heads = {}
    result = Conversion()
    new_inits: list[Any] = []
    block_sums: dict[str, str] = {}  # input name → its block sums' name
    indicators: set[tuple[int, int]] = set()  # (K, block) of the block indicators made so far
    kernel_blocks: set[str] = set()  # the raw block initializers made so far
    packed_blocks: set[str] = set()  # the MatMulNBits B initializers made so far
    typed = {v.name for v in graph.value_info} | {i.name for i in graph.input} | {o.name for o in graph.output}
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

    def block_sum(x: str, k: int, block: int = gb.BLOCK) -> tuple[str, list[Any]]:
        """The name of ``x``'s sums over each block of ``block`` along its last axis, and the node computing
        them: ``x`` [.., K] times the 0/1 indicator [K, K / block] (once per ``x`` and block)."""
        key = x if block == gb.BLOCK else f"{x}@{block}"
        if key in block_sums:
            return block_sums[key], []
        indicator = f"/gguf/block_indicator_{k}" if block == gb.BLOCK else f"/gguf/block_indicator_{k}_{block}"
        if (k, block) not in indicators:
            indicators.add((k, block))
            blocks = np.arange(k) // block
            new_inits.append(
                numpy_helper.from_array((blocks[:, None] == np.arange(k // block)[None, :]).astype(np.float32), indicator)
            )
        base = f"/gguf/block_sums/{len(block_sums)}"
        block_sums[key] = f"{base}/output_0"
        result.block_sum_matmuls.append(f"{base}/MatMul")
        return block_sums[key], [helper.make_node("MatMul", [x, indicator], [block_sums[key]], name=f"{base}/MatMul")]

    def raw_rows(targets: tuple[str, ...], orders: list[np.ndarray], k: int) -> str:
        """The GGUF tensors' block bytes side by side ``[N, bytes per row]``, rows in ``orders`` (one
        initializer per tensor set); a row whose byte count is not its blocks' is refused."""
        key = "+".join(targets)
        name = f"/gguf/{key}/blocks"
        rows = []
        for target, order in zip(targets, orders):
            matrix = matrices[target]
            expected = gb.row_bytes(matrix.kind, k)
            if matrix.raw.ndim != 2 or matrix.raw.shape != (matrix.rows, expected):
                raise WeightMismatchError(
                    f"{target}: {matrix.kind} rows of {k} weights take {expected} bytes each, "
                    f"the GGUF holds {list(matrix.raw.shape)} for {matrix.rows} rows"
                )
            rows.append(matrix.raw[order])
        if name not in kernel_blocks:
            kernel_blocks.add(name)
            new_inits.append(numpy_helper.from_array(np.ascontiguousarray(np.concatenate(rows)), name))
        return name

    def packed(targets: tuple[str, ...], orders: list[np.ndarray]) -> tuple[str, gb.Blocks]:
        """The GGUF tensors' packed ``B`` side by side (one initializer per tensor set, shared by its users)
        and their blocks (scales, offsets or None, the weights dequantized for the check)."""
        key = "+".join(targets)
        b_name = f"/gguf/{key}/B"
        parts = [gb.blocks_of(matrices[target]).rows(order) for target, order in zip(targets, orders)]
        if len({(p.bits, p.block, p.offsets is None) for p in parts}) != 1:
            raise WeightMismatchError(f"{key}: the tensors have different block forms")
        codes, scales, dequantized = (np.concatenate([getattr(p, a) for p in parts]) for a in ("codes", "scales", "dequantized"))
        offsets = None if parts[0].offsets is None else np.concatenate([p.offsets for p in parts])  # along N
        blocks = gb.Blocks(parts[0].bits, parts[0].block, codes, scales, offsets, dequantized)
        result.users.setdefault(key, [])
        if b_name not in packed_blocks:
            packed_blocks.add(b_name)
            new_inits.append(numpy_helper.from_array(gb.pack_codes(blocks), b_name))
        return b_name, blocks

    for node in graph.node:
        targets = gguf_names(node.name, matrices) if node.op_type in ("MatMul", "Gather") else ()
        found = [matrices.get(t) for t in targets]
        kinds = {m.kind for m in found if m is not None}
        weight = weight_of(node) if targets else None
        allowed = (
            {"Q8_0"} & (set(gguf_types) | kernel_formats)
            if node.op_type == "Gather"
            else set(KINDS) & (set(gguf_types) | kernel_formats)
        )
        if weight is None or None in found or len(kinds) != 1 or not kinds <= allowed:
            if targets:
                result.left[node.name] = "+".join(m.kind if m else "absent" for m in found)
            nodes.append(node)
            continue
        kind = kinds.pop()
        k, n = weight.shape
        if {m.cols for m in found} != {k} or sum(m.rows for m in found) != n:
            shapes = ", ".join(f"{m.name} [{m.cols}, {m.rows}]" for m in found)
            raise WeightMismatchError(f"{node.name}: weight [{k}, {n}] but the GGUF has {shapes}")
        orders = []
        for matrix in found:
            order = np.arange(matrix.rows)
            for part, count in heads.items():
                if f".{part}." in matrix.name:
                    order = gb.unpermute_rows(matrix.rows, count)
            orders.append(order)
        base = node.name.rsplit("/", 1)[0] + "/gguf"
        if node.op_type == "MatMul" and kind in kernel_formats:
            parts = [gb.blocks_of(matrices[target]).rows(order) for target, order in zip(targets, orders)]
            _check_equal(node.name, "+".join(targets), np.concatenate([p.dequantized for p in parts]), weight)
            level = level_of(node.name, kind, levels, config.get("num_hidden_layers"))
            mode = "exact" if level == 0 else "fast"
            nodes.append(
                helper.make_node(
                    KERNEL_OP,
                    [node.input[0], raw_rows(targets, orders, k)],
                    [node.output[0]],
                    name=f"{base}/{KERNEL_OP}",
                    domain=KERNELS_DOMAIN,
                    format=kind,
                    mode=mode,
                    K=k,
                    N=n,
                )
            )
            # The shapes around it ([.., S, K] → [.., S, N]): ONNX Runtime infers none through a custom op,
            # and the kernel checks its input's rank and width when the session is made.
            for name, width in ((node.input[0], k), (node.output[0], n)):
                if name not in typed:
                    typed.add(name)
                    graph.value_info.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [None, None, width]))
            result.converted.append(node.name)
            result.users.setdefault("+".join(targets), []).append(node.name)
            result.kernel_modes[f"{kind} {mode}"] = result.kernel_modes.get(f"{kind} {mode}", 0) + 1
            key = f"{kind} {KERNEL_OP}"
            result.by_type[key] = result.by_type.get(key, 0) + 1
            continue
        b_name, blocks = packed(targets, orders)
        _check_equal(node.name, "+".join(targets), blocks.dequantized, weight)
        d, offsets, bits = blocks.scales, blocks.offsets, blocks.bits
        if node.op_type == "Gather":
            nodes += _gather_block_quantized(node, b_name, d, base, bits, new_inits)
        else:
            x, y = node.input[0], node.output[0]
            level = level_of(node.name, kind, levels, config.get("num_hidden_layers"))
            if bits == 8 and split_8bit:  # two 4-bit halves: s (lo - 8) + 16 s (hi - 8), offset 8 s per block
                low, high = gb.split_nibbles(blocks)
                parts = [(low, f"{base}/low"), (high, f"{base}/high")]
                offsets = np.float32(8) * blocks.scales
            else:
                parts = [(blocks, None)]
            outputs = []
            for part, name in parts:
                name = name or base
                b_part = b_name if name == base else f"{name}/B"
                if name != base:
                    new_inits.append(numpy_helper.from_array(gb.pack_codes(part), b_part))
                new_inits.append(numpy_helper.from_array(part.scales.reshape(-1), f"{name}/scales"))
                outputs.append(f"{name}/MatMulNBits_output_0")
                nodes.append(
                    helper.make_node(
                        "MatMulNBits",
                        [x, b_part, f"{name}/scales"],
                        [outputs[-1]],
                        name=f"{name}/MatMulNBits",
                        domain=MS_DOMAIN,
                        K=k,
                        N=n,
                        bits=part.bits,
                        block_size=part.block,
                        accuracy_level=level,
                    )
                )
            if offsets is not None:  # Q4_1, Q4_K, split 8-bit: add the block sums of x times the blocks' offsets
                new_inits.append(numpy_helper.from_array(offsets.T.copy(), f"{base}/offsets"))  # [K / block, N]
                sums, sum_nodes = block_sum(x, k, blocks.block)
                nodes += sum_nodes
                offset_name = f"{base}/offsets/MatMul"
                nodes.append(
                    helper.make_node("MatMul", [sums, f"{base}/offsets"], [f"{base}/offsets_output_0"], name=offset_name)
                )
                outputs.append(f"{base}/offsets_output_0")
                result.offset_matmuls.append(offset_name)
            if len(outputs) == 1:
                nodes[-1].output[0] = y
            else:
                total = outputs[0]
                for i, term in enumerate(outputs[1:]):
                    out = y if i == len(outputs) - 2 else f"{base}/Add_{i}_output_0"
                    nodes.append(
                        helper.make_node("Add", [total, term], [out], name=f"{base}/Add" if i == 0 else f"{base}/Add_{i}")
                    )
                    total = out
        result.converted.append(node.name)
        result.users["+".join(targets)].append(node.name)
        key = f"{kind} {node.op_type}"
        result.by_type[key] = result.by_type.get(key, 0) + 1

    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(new_inits)
    drop_unused(model)
    if not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    if result.kernel_modes and not any(o.domain == KERNELS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(KERNELS_DOMAIN, KERNELS_OPSET))
    return result


def _gather_block_quantized(node, b_name: str, d: np.ndarray, base: str, bits: int, new_inits: list[Any]) -> list[Any]:
    """``GatherBlockQuantized`` over the packed table ``[N, K / 32, 32 * bits / 8]`` (shared with the tied LM
    head), then a Reshape of its ``[.., K / 32, 32]`` rows back to ``[.., K]``."""
    from onnx import helper, numpy_helper  # the build extra: imported by a build only

    rows, blocks = d.shape
    new_inits.append(numpy_helper.from_array(d.reshape(rows, blocks, 1), f"{base}/scales"))
    new_inits.append(numpy_helper.from_array(np.array([0, 0, blocks * gb.BLOCK], np.int64), f"{base}/row_shape"))
    blocked = f"{base}/GatherBlockQuantized_output_0"
    return [
        helper.make_node(
            "GatherBlockQuantized",
            [b_name, node.input[1], f"{base}/scales"],
            [blocked],
            name=f"{base}/GatherBlockQuantized",
            domain=MS_DOMAIN,
            bits=bits,
            block_size=gb.BLOCK,
            gather_axis=0,
            quantize_axis=2,
        ),
        helper.make_node("Reshape", [blocked, f"{base}/row_shape"], [node.output[0]], name=f"{base}/Reshape"),
    ]


def _check_equal(node_name: str, target: str, dequantized: np.ndarray, weight: np.ndarray) -> None:
    """``dequantized`` ``[N, K]`` must be the export's ``weight`` ``[K, N]`` exactly."""
    if not np.array_equal(dequantized, weight.T):
        diff = float(np.abs(dequantized - weight.T).max())
        raise WeightMismatchError(f"{node_name}: {target} dequantized differs from the export's weight (max |diff| {diff:g})")
