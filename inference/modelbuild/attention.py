"""Replace the export's unfused attention with one ``GroupQueryAttention`` per layer over packed q/k/v.

optimum's export spells each layer's attention out in ~100 small nodes (shape arithmetic, rotary
embedding, the causal mask, ``repeat_kv``'s Expand/Reshape, the cache Concat, two MatMuls, a
Softmax and its NaN guard) after three separate q/k/v projections. At decode time, with one
token, those nodes cost more in per-node overhead than in arithmetic. Per layer they become:

    qkv = MatMul(x, [W_q | W_k | W_v])          [B, S, (heads + 2 kv_heads) · head_dim]
    out, present.{i}.key, present.{i}.value = GroupQueryAttention(
        qkv, -, -, past.{i}.key, past.{i}.value, seqlens_k, total_sequence_length,
        cos_cache, sin_cache, position_ids)     (com.microsoft, do_rotary=1)

The packed projection ``/model/layers.{i}/self_attn/qkv_proj/MatMul`` holds the three fp32
weights side by side (``lossless.convert`` maps it to the GGUF's ``attn_q``, ``attn_k`` and
``attn_v`` blocks); the rotary embedding happens inside the attention kernel, reading
``position_ids``. ``past_key_values.*``/``present.*`` stay ``[B, kv_heads, P(+S), head_dim]``
(GroupQueryAttention's BNSH layout) and may be **one buffer**: when the caller binds the same
``[B, kv_heads, capacity, head_dim]`` memory as past and present, each step writes its new keys
and values in place after row ``b``'s ``seqlens_k[b]`` earlier ones (the engine does this).

``seqlens_k`` (per row: tokens so far − 1) and ``total_sequence_length`` come from
``attention_mask``: ``ReduceSum(mask) − 1`` per row and its width, so rows of different lengths
(a batch whose mask rows hold fewer ones) each get their own length. GroupQueryAttention is causal
and has no key mask: **ones must be left-aligned** in each row (no holes); a row's zeros at the end
mean "this row is shorter".

The rotary tables are computed once, in float64 and rounded to float32, from the export's own
``inv_freq`` for positions ``0 .. max_positions − 1`` (the export computes them per call in
float32; the two agree to ~1 ulp). The scale stays ``1 / sqrt(head_dim)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from inference import model_kernels
from inference.modelbuild.onnx_graph import drop_unused

MS_DOMAIN = "com.microsoft"
PREFIX = "/model/layers.{i}/self_attn"
INV_FREQ_USER = "/model/rotary_emb/Expand"  # the export's rotary: Expand(inv_freq [1, D/2, 1], …)
SCALING_USERS = ("/model/rotary_emb/Mul_1", "/model/rotary_emb/Mul_2")  # cos · scaling, sin · scaling
COS, SIN = "/gqa/cos_cache", "/gqa/sin_cache"
SEQLENS, TOTAL = "/gqa/seqlens_k", "/gqa/total_sequence_length"


class FusionError(RuntimeError):
    """The export does not have the layout this fusion expects (nothing is changed then)."""


class GraphIndex:
    """An export's nodes by name and by output, and its constants (initializers or Constant nodes)."""

    def __init__(self, graph: Any) -> None:
        self.by_name = {n.name: n for n in graph.node}
        self.producers = {o: n for n in graph.node for o in n.output}
        self.inits = {i.name: i for i in graph.initializer}
        self.constants = {n.output[0]: n for n in graph.node if n.op_type == "Constant"}

    def is_constant(self, name: str) -> bool:
        return name in self.inits or name in self.constants

    def constant(self, name: str) -> np.ndarray:
        from onnx import numpy_helper  # the build extra: imported by a build only

        if name in self.inits:
            return numpy_helper.to_array(self.inits[name])
        if name in self.constants:
            return numpy_helper.to_array(self.constants[name].attribute[0].t)
        raise FusionError(f"{name} is not a constant")


@dataclass(frozen=True)
class Heads:
    """The attention's sizes, read from a transformers config."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int

    @classmethod
    def of(cls, config: dict[str, Any]) -> Heads:
        heads = config["num_attention_heads"]
        head_dim = config.get("head_dim") or config["hidden_size"] // heads
        return cls(config["num_hidden_layers"], heads, config.get("num_key_value_heads", heads), head_dim)


@dataclass(frozen=True)
class LayerAttention:
    """One layer's attention as the export spells it: its q/k/v projections, its o_proj, and the
    cache's graph inputs and outputs; ``attn_out`` is what o_proj reads (the fused node's output)."""

    i: int
    projections: tuple[Any, Any, Any]  # the q, k and v MatMul nodes
    o_proj: Any
    past: tuple[str, str]  # past_key_values.{i}.key / .value
    present: tuple[str, str]  # present.{i}.key / .value

    @property
    def prefix(self) -> str:
        return PREFIX.format(i=self.i)

    @property
    def attn_out(self) -> str:
        return str(self.o_proj.input[0])

    @classmethod
    def find(cls, graph: Any, index: GraphIndex, i: int, layout: str, constant_weights: bool = False) -> LayerAttention:
        """Layer ``i``'s nodes; ``FusionError`` naming what is missing when the export does not have
        ``layout`` (the name of the expected layout, for the message). ``constant_weights``: the
        projections' weights must be initializers (they are read to be packed)."""
        p = PREFIX.format(i=i)
        projections = tuple(index.by_name.get(f"{p}/{x}_proj/MatMul") for x in ("q", "k", "v"))
        o_proj = index.by_name.get(f"{p}/o_proj/MatMul")
        past = (f"past_key_values.{i}.key", f"past_key_values.{i}.value")
        present = (f"present.{i}.key", f"present.{i}.value")
        graph_inputs = {x.name for x in graph.input}
        graph_outputs = {x.name for x in graph.output}
        missing = [
            f"{x}_proj" for x, n in zip("qkv", projections) if n is None or (constant_weights and n.input[1] not in index.inits)
        ]
        missing += [x for x in past if x not in graph_inputs]
        missing += [x for x in present if x not in graph_outputs or x not in index.producers]
        if o_proj is None or missing:
            raise FusionError(f"layer {i}: not {layout} (missing {missing or 'o_proj'})")
        return cls(i, projections, o_proj, past, present)  # type: ignore[arg-type]

    def replaced(self, index: GraphIndex) -> set[str]:
        """The names of the export's nodes whose outputs the fused attention produces instead."""
        return {index.producers[name].name for name in (self.attn_out, *self.present)}


def replace_nodes(model: Any, replaced: set[str], new_nodes: list[Any], new_inits: list[Any], available: set[str]) -> None:
    """Drop the ``replaced`` nodes, add ``new_nodes`` and ``new_inits``, keep the node list
    topologically sorted (``available``: the graph's inputs and constants, new ones included), drop
    what nothing reads any more, and import the com.microsoft domain the fused nodes live in."""
    from onnx import helper  # the build extra: imported by a build only

    graph = model.graph
    kept = [n for n in graph.node if n.name not in replaced]
    del graph.node[:]
    graph.node.extend(topological(kept + new_nodes, available | {i.name for i in new_inits}))
    graph.initializer.extend(new_inits)
    drop_unused(model)
    if not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))


class AttentionRewrite:
    """What every attention fusion does around its own nodes: the export indexed, the attention's
    sizes, the shared ``seqlens_k`` / ``total_sequence_length`` nodes (``sequence_lengths``) to add to,
    each layer's export nodes found in the expected layout and marked replaced (:meth:`layer`), and
    at the end the fused nodes put in their place (:meth:`finish`)."""

    def __init__(self, model: Any, config: dict[str, Any], layout: str, constant_weights: bool = False) -> None:
        self.model, self.graph = model, model.graph
        self.shape = Heads.of(config)
        self.index = GraphIndex(model.graph)
        self.nodes_before = len(model.graph.node)
        self.new_nodes, self.new_inits = sequence_lengths()
        self.replaced: set[str] = set()  # names of nodes whose outputs the fused nodes now produce
        self._layout, self._constant_weights = layout, constant_weights

    def layer(self, i: int) -> LayerAttention:
        """Layer ``i``'s attention (``FusionError`` where the export does not have the layout), its
        nodes marked replaced."""
        layer = LayerAttention.find(self.graph, self.index, i, self._layout, self._constant_weights)
        self.replaced |= layer.replaced(self.index)
        return layer

    def finish(self, new_inputs: frozenset[str] | set[str] = frozenset()) -> dict[str, int]:
        """Replace the marked nodes by the new ones (``new_inputs``: graph inputs the fusion added);
        returns the node counts for the summary."""
        available = {i.name for i in self.graph.input} | set(new_inputs) | set(self.index.inits)
        replace_nodes(self.model, self.replaced, self.new_nodes, self.new_inits, available)
        return {"nodes_before": self.nodes_before, "nodes_after": len(self.graph.node)}


def rotary_inv_freq(index: GraphIndex, expand: str, scaling_users: Sequence[str], head_dim: int) -> np.ndarray:
    """The export's rotary inv_freq [head_dim / 2], read from its ``expand`` node (``Expand(inv_freq
    [1, D/2, 1], …)``), after checking that the attention scaling its ``scaling_users`` multiply by
    (cos · scaling, sin · scaling) is 1, as for plain RoPE."""
    if expand not in index.by_name:
        raise FusionError(f"no {expand} (its inv_freq) in the export")
    inv_freq = index.constant(index.by_name[expand].input[0]).reshape(-1).astype(np.float32)
    if inv_freq.shape != (head_dim // 2,):
        raise FusionError(f"{expand}: inv_freq has shape {inv_freq.shape}, expected ({head_dim // 2},)")
    scaling = {float(index.constant(x)) for name in scaling_users for x in index.by_name[name].input if index.is_constant(x)}
    if scaling != {1.0}:
        raise FusionError(f"{expand}: rotary attention scaling {scaling} is not 1")
    return inv_freq


def fuse(model, config: dict[str, Any]) -> dict[str, Any]:
    """Fuse every layer's attention in the ``onnx.ModelProto`` ``model`` in place; returns a summary."""
    from onnx import helper, numpy_helper  # the build extra: imported by a build only

    rewrite = AttentionRewrite(model, config, "the expected attention layout", constant_weights=True)
    shape, index, new_nodes, new_inits = rewrite.shape, rewrite.index, rewrite.new_nodes, rewrite.new_inits
    max_positions = config["max_position_embeddings"]
    cos, sin = rotary_tables(rotary_inv_freq(index, INV_FREQ_USER, SCALING_USERS, shape.head_dim), max_positions)

    new_inits += [numpy_helper.from_array(cos, COS), numpy_helper.from_array(sin, SIN)]
    for i in range(shape.layers):
        layer = rewrite.layer(i)
        projections, p = layer.projections, layer.prefix
        if len({n.input[0] for n in projections}) != 1:
            raise FusionError(f"layer {i}: q, k and v do not project the same input")
        weights = [numpy_helper.to_array(index.inits[n.input[1]]) for n in projections]  # [K, N_q], [K, N_kv], [K, N_kv]
        qkv_weight, qkv = f"{p}/qkv_proj/weight", f"{p}/qkv_proj/MatMul_output_0"
        new_inits.append(numpy_helper.from_array(np.concatenate(weights, axis=1), qkv_weight))  # [K, N_q + 2 N_kv]
        new_nodes += [
            helper.make_node("MatMul", [projections[0].input[0], qkv_weight], [qkv], name=f"{p}/qkv_proj/MatMul"),
            helper.make_node(
                "GroupQueryAttention",
                [qkv, "", "", *layer.past, SEQLENS, TOTAL, COS, SIN, "position_ids"],
                [layer.attn_out, *layer.present],
                name=f"{p}/gqa/GroupQueryAttention",
                domain=MS_DOMAIN,
                num_heads=shape.heads,
                kv_num_heads=shape.kv_heads,
                scale=float(1 / np.sqrt(shape.head_dim)),
                do_rotary=1,
                rotary_interleaved=0,
            ),
        ]

    nodes = rewrite.finish()
    return {
        "method": "q/k/v packed into one MatMul; GroupQueryAttention (com.microsoft, rotary inside) per layer, "
        "replacing the export's attention",
        "layers": shape.layers,
        "rotary_table_positions": max_positions,
        "attention_mask": "seqlens_k per row from its sum; the engine passes all-ones rows",
        **nodes,
    }


def to_our_kernel(model: Any) -> int:
    """Every ``GroupQueryAttention`` (com.microsoft) node of the ``onnx.ModelProto`` ``model`` made our
    ``GroupAttention`` (``model_kernels.DOMAIN``): the same inputs, outputs and attributes, the same
    arithmetic in fp32 (``inference/kernels/src/attention.c``), 1.5-2.9x faster per node on decode
    steps. Returns how many nodes changed (the manifest's ``kernels.attention_ops``)."""
    from onnx import helper  # the build extra: imported by a build only

    changed = 0
    for node in model.graph.node:
        if node.op_type == "GroupQueryAttention" and node.domain == MS_DOMAIN:
            node.op_type, node.domain = model_kernels.ATTENTION_OP_TYPE, model_kernels.DOMAIN
            changed += 1
    if changed and not any(o.domain == model_kernels.DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(model_kernels.DOMAIN, model_kernels.OPSET_VERSION))
    return changed


def rotary_tables(inv_freq: np.ndarray, max_positions: int) -> tuple[np.ndarray, np.ndarray]:
    """GroupQueryAttention's ``cos_cache`` and ``sin_cache`` [max_positions, head_dim / 2] for ``inv_freq``
    [head_dim / 2]: the angles in float32 as the export computes them, their cosines and sines in float64,
    rounded to float32."""
    angles = np.arange(max_positions, dtype=np.float32)[:, None] * inv_freq[None, :]  # [P, D / 2] float32, as the export
    return np.cos(angles.astype(np.float64)).astype(np.float32), np.sin(angles.astype(np.float64)).astype(np.float32)


def sequence_lengths(mask: str = "attention_mask", prefix: str = "/gqa") -> tuple[list[Any], list[Any]]:
    """The nodes and initializers computing GroupQueryAttention's ``seqlens_k`` (``{prefix}/seqlens_k``:
    per row, ``ReduceSum(mask) - 1`` as int32) and ``total_sequence_length`` (``{prefix}/total_sequence_length``:
    the mask's width) from the graph input ``mask`` [B, T]; by default ``SEQLENS`` and ``TOTAL`` from
    ``attention_mask``. The constants are the shared ``/gqa/axis_1``, ``/gqa/axis_0`` and ``/gqa/one``
    (given again by a second call: the caller keeps one of each)."""
    from onnx import helper, numpy_helper  # the build extra: imported by a build only

    p = prefix
    nodes = [
        helper.make_node("ReduceSum", [mask, "/gqa/axis_1"], [f"{p}/mask_sum"], name=f"{p}/ReduceSum", keepdims=0),
        helper.make_node("Sub", [f"{p}/mask_sum", "/gqa/one"], [f"{p}/seqlens_k_64"], name=f"{p}/Sub"),
        helper.make_node("Cast", [f"{p}/seqlens_k_64"], [f"{p}/seqlens_k"], name=f"{p}/Cast", to=6),
        helper.make_node("Shape", [mask], [f"{p}/mask_width"], name=f"{p}/Shape", start=1, end=2),
        helper.make_node("Squeeze", [f"{p}/mask_width", "/gqa/axis_0"], [f"{p}/total_64"], name=f"{p}/Squeeze"),
        helper.make_node("Cast", [f"{p}/total_64"], [f"{p}/total_sequence_length"], name=f"{p}/Cast_1", to=6),
    ]
    inits = [
        numpy_helper.from_array(np.array([1], np.int64), "/gqa/axis_1"),
        numpy_helper.from_array(np.array([0], np.int64), "/gqa/axis_0"),
        numpy_helper.from_array(np.array(1, np.int64), "/gqa/one"),
    ]
    return nodes, inits


def topological(nodes: list[Any], available: set[str]) -> list[Any]:
    """``nodes`` in an order where every input is produced before it is used (stable otherwise)."""
    ready = set(available) | {""}
    done: list[Any] = []
    pending = list(nodes)
    while pending:
        left = []
        for node in pending:
            if all(x in ready for x in node.input):
                done.append(node)
                ready.update(node.output)
            else:
                left.append(node)
        if len(left) == len(pending):
            raise FusionError(f"cannot order the graph: {len(left)} nodes wait for inputs never produced, e.g. {left[0].name}")
        pending = left
    return done
