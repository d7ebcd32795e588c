"""Gemma 3's attention as one ``GroupQueryAttention`` per layer: QK-norm in front, rotary inside, the
sliding layers' window inside.

optimum's export spells each Gemma layer's attention out in ~150 nodes (q/k/v reshaped to heads,
QK-norm, two rotary tables computed per call, the causal and sliding-window masks built from
``attention_mask``, ``repeat_kv``, the cache Concat, two MatMuls, a Softmax and its NaN guard), and
the window is applied through the mask only, so every layer reads its whole cache. Run after
``norms.fuse`` (which has turned each QK-norm into a ``SimplifiedLayerNormalization`` over the head
dimension), per layer ``i`` they become:

    q = Reshape(q_proj(x), [0, 0, heads, head_dim])          [B, S, heads, head_dim]
    q = SimplifiedLayerNormalization(q, 1 + w_q)             over head_dim (the export's own gamma)
    q = Reshape(q, [0, 0, heads · head_dim])                 [B, S, heads · head_dim]
    k = the same with kv_heads and 1 + w_k;  v = v_proj(x)   [B, S, kv_heads · head_dim]
    out, present.{i}.key, present.{i}.value = GroupQueryAttention(
        q, k, v, past.{i}.key, past.{i}.value, seqlens_k, total_sequence_length,
        cos_cache, sin_cache, position_ids)                  (com.microsoft, do_rotary=1)

with the rotary tables of the layer's kind (``rope_local_base_freq``, 10k, on the sliding layers;
``rope_theta``, 1e6, on the global ones; each from the export's own ``inv_freq``), the scale
``query_pre_attn_scalar ** -0.5`` and, on the sliding layers, ``local_window_size = sliding_window``:
both ONNX Runtime's kernel and transformers' Gemma attend to the ``sliding_window`` positions ending
at the current one (checked past the window on the tiny model and the real one). The q/k/v
projections keep their names (``lossless.convert`` maps them to ``attn_q``, ``attn_k`` and
``attn_v``; they are not packed: ``attn_v`` is Q8_0 on half the layers and Q5_0 on the others).

The graph gains a ``position_ids`` input ``[B, S]`` (the export derived positions from the mask)
and takes the layout the engine feeds SmolLM2's (``attention.py``): ``seqlens_k`` and
``total_sequence_length`` from ``attention_mask`` on the global layers, the cache
``[B, kv_heads, P(+S), head_dim]``, one buffer bound as past and present. The sliding layers read
their own lengths from a second input, ``sliding_attention_mask`` ``[B, P' + S]`` (``P'``: the
positions their buffers hold), so that their buffers can stop at the window (the engine's
``KVCache`` keeps the last positions there and shifts them; the rotary angle comes from
``position_ids``, not from the buffer's length, and keys are cached rotated, so a shifted buffer
needs no re-rotation). A caller whose buffers hold every position feeds it ``attention_mask``.
The graph's ``metadata_props`` record ``sliding_window`` and ``sliding_layers`` for the engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from inference.model_dir import SLIDING_LAYERS_KEY, SLIDING_MASK, SLIDING_WINDOW_KEY
from inference.modelbuild.attention import (
    MS_DOMAIN,
    SEQLENS,
    TOTAL,
    AttentionRewrite,
    FusionError,
    rotary_inv_freq,
    rotary_tables,
    sequence_lengths,
)

# The export's two rotary embeddings, by the layer kind that reads each.
ROTARY = {"full_attention": "/model/rotary_emb", "sliding_attention": "/model/rotary_emb_local"}
TABLES = {
    kind: (f"/gqa/{name}/cos_cache", f"/gqa/{name}/sin_cache")
    for kind, name in (("full_attention", "global"), ("sliding_attention", "local"))
}
POSITION_IDS = "position_ids"
# The sliding layers' own lengths: their cache buffers hold the last positions only (the engine's
# ``KVCache``), so their ``seqlens_k`` and ``total_sequence_length`` come from a mask of their own.
SLIDING_PREFIX = "/gqa/sliding"


def fuse(model, config: dict[str, Any]) -> dict[str, Any]:
    """Fuse every layer's attention of Gemma 3's ``onnx.ModelProto`` ``model`` in place; returns a summary."""
    from onnx import TensorProto, helper, numpy_helper  # the build extra: imported by a build only

    rewrite = AttentionRewrite(model, config, "Gemma's attention layout")
    graph, shape, index, new_nodes, new_inits = rewrite.graph, rewrite.shape, rewrite.index, rewrite.new_nodes, rewrite.new_inits
    layers, heads, kv_heads, head_dim = shape.layers, shape.heads, shape.kv_heads, shape.head_dim
    layer_types = config.get("layer_types")
    window = config.get("sliding_window")
    if not layer_types or len(layer_types) != layers or set(layer_types) - set(ROTARY):
        raise FusionError(f"config layer_types {layer_types!r}: expected one of {sorted(ROTARY)} per layer")
    if "sliding_attention" in layer_types and not window:
        raise FusionError("sliding layers but no sliding_window in the config")
    if config.get("attn_logit_softcapping") is not None:
        raise FusionError("attention logit soft-capping is not handled")
    producers = index.producers
    consumers: dict[str, list[Any]] = {}
    for n in graph.node:
        for x in n.input:
            consumers.setdefault(x, []).append(n)

    sliding_layers = [i for i, kind in enumerate(layer_types) if kind == "sliding_attention"]
    if sliding_layers:
        new_nodes += sequence_lengths(SLIDING_MASK, SLIDING_PREFIX)[0]  # the same constants
    for kind in sorted(set(layer_types)):
        rotary = ROTARY[kind]
        scaling_users = (f"{rotary}/Mul_1", f"{rotary}/Mul_2")
        inv_freq = rotary_inv_freq(index, f"{rotary}/Expand", scaling_users, head_dim)  # [head_dim / 2]
        cos, sin = rotary_tables(inv_freq, config["max_position_embeddings"])  # [P, head_dim / 2] each
        new_inits += [numpy_helper.from_array(cos, TABLES[kind][0]), numpy_helper.from_array(sin, TABLES[kind][1])]
    new_inits += [
        numpy_helper.from_array(np.array([0, 0, heads, head_dim], np.int64), "/gqa/q_heads"),
        numpy_helper.from_array(np.array([0, 0, kv_heads, head_dim], np.int64), "/gqa/kv_heads"),
        numpy_helper.from_array(np.array([0, 0, heads * head_dim], np.int64), "/gqa/q_flat"),
        numpy_helper.from_array(np.array([0, 0, kv_heads * head_dim], np.int64), "/gqa/kv_flat"),
    ]

    graph_inputs = {i.name for i in graph.input}
    for i, kind in enumerate(layer_types):
        layer = rewrite.layer(i)
        projections, p = layer.projections, layer.prefix
        norms = [producers.get(f"{p}/{x}_norm/Mul_1_output_0") for x in ("q", "k")]
        if any(n is None or n.op_type != "SimplifiedLayerNormalization" for n in norms):
            raise FusionError(f"layer {i}: no fused q_norm/k_norm (run norms.fuse first)")
        if rotary_read(norms[0].output[0], consumers, producers) != ROTARY[kind]:
            raise FusionError(f"layer {i} ({kind}) does not rotate q with {ROTARY[kind]}")
        flat = []
        for x, norm, shape, count in (("q", norms[0], "/gqa/q_heads", heads), ("k", norms[1], "/gqa/kv_heads", kv_heads)):
            base = f"{p}/{x}_norm/gqa"
            new_nodes += [
                helper.make_node(
                    "Reshape", [projections["qk".index(x)].output[0], shape], [f"{base}/heads"], name=f"{base}/Reshape"
                ),
                helper.make_node(
                    "SimplifiedLayerNormalization",
                    [f"{base}/heads", norm.input[1]],
                    [f"{base}/normed"],
                    name=f"{base}/SimplifiedLayerNormalization",
                    axis=-1,
                    epsilon=next(a.f for a in norm.attribute if a.name == "epsilon"),
                ),
                helper.make_node(
                    "Reshape",
                    [f"{base}/normed", "/gqa/q_flat" if count == heads else "/gqa/kv_flat"],
                    [f"{base}/flat"],
                    name=f"{base}/Reshape_1",
                ),
            ]
            flat.append(f"{base}/flat")
        cos, sin = TABLES[kind]
        sliding = {"local_window_size": window} if kind == "sliding_attention" else {}
        seqlens, total = (
            (f"{SLIDING_PREFIX}/seqlens_k", f"{SLIDING_PREFIX}/total_sequence_length") if sliding else (SEQLENS, TOTAL)
        )
        new_nodes.append(
            helper.make_node(
                "GroupQueryAttention",
                [*flat, projections[2].output[0], *layer.past, seqlens, total, cos, sin, POSITION_IDS],
                [layer.attn_out, *layer.present],
                name=f"{p}/gqa/GroupQueryAttention",
                domain=MS_DOMAIN,
                num_heads=heads,
                kv_num_heads=kv_heads,
                scale=float(config["query_pre_attn_scalar"]) ** -0.5,
                do_rotary=1,
                rotary_interleaved=0,
                **sliding,
            )
        )

    if POSITION_IDS not in graph_inputs:
        ids = next(i for i in graph.input if i.name == "input_ids")
        dims = [d.dim_param or d.dim_value for d in ids.type.tensor_type.shape.dim]  # [batch_size, sequence_length]
        graph.input.append(helper.make_tensor_value_info(POSITION_IDS, TensorProto.INT64, dims))
    if sliding_layers and SLIDING_MASK not in graph_inputs:
        mask = next(i for i in graph.input if i.name == "attention_mask")
        batch = mask.type.tensor_type.shape.dim[0]
        dims = [batch.dim_param or batch.dim_value, "sliding_past_sequence_length + sequence_length"]
        graph.input.append(helper.make_tensor_value_info(SLIDING_MASK, TensorProto.INT64, dims))
        helper.set_model_props(
            model,
            {
                **{p.key: p.value for p in model.metadata_props},
                SLIDING_WINDOW_KEY: str(window),
                SLIDING_LAYERS_KEY: ",".join(map(str, sliding_layers)),
            },
        )
    nodes = rewrite.finish({POSITION_IDS, SLIDING_MASK})
    return {
        "method": "QK-norm as SimplifiedLayerNormalization over head_dim, then GroupQueryAttention (com.microsoft, "
        "rotary inside) per layer, replacing the export's attention; position_ids as an input",
        "layers": layers,
        "sliding_layers": sliding_layers,
        "local_window_size": window,
        "sliding_attention_mask": SLIDING_MASK if sliding_layers else None,
        "rotary_tables": {kind: TABLES[kind][0].rsplit("/", 2)[1] for kind in sorted(set(layer_types))},
        "rotary_table_positions": config["max_position_embeddings"],
        "cache": "global layers: [B, kv_heads, capacity, head_dim] holding every position (seqlens_k from attention_mask); "
        "sliding layers: buffers of their own length holding the last positions only (seqlens_k from sliding_attention_mask; "
        "keys are rotated from position_ids before they are cached)",
        **nodes,
    }


def rotary_read(q: str, consumers: dict[str, list[Any]], producers: dict[str, Any]) -> str | None:
    """Which of the export's rotary embeddings (``ROTARY``'s values) the ``q · cos`` product after the
    normed ``q`` reads (the export shares the tables' Unsqueeze between layers of a kind)."""
    products = [n for n in consumers.get(q, []) if n.op_type == "Mul"]
    pending = [x for n in products for x in n.input if x != q]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        node = producers.get(name)
        if name in seen or node is None:
            continue
        seen.add(name)
        for prefix in sorted(ROTARY.values(), key=len, reverse=True):
            if node.name.startswith(prefix + "/"):
                return prefix
        pending += list(node.input)
    return None
