"""Pack each layer's gate and up projections into one MatMul (one 4-bit kernel call instead of two).

The export computes ``down(silu(x · W_gate) * (x · W_up))`` with two MatMuls over the same input.
Per layer they become

    gate_up = MatMul(x, [W_gate | W_up])        [B, S, 2 · intermediate]
    gate, up = Split(gate_up, axis -1)          [B, S, intermediate] each

where ``gate`` and ``up`` keep the names of the old MatMuls' outputs, so everything after them is
untouched (ONNX Runtime fuses the SiLU itself when the session loads). The packed projection
``/model/layers.{i}/mlp/gate_up_proj/MatMul`` holds the two fp32 weights side by side;
``lossless.convert`` maps it to the GGUF's ``ffn_gate`` and ``ffn_up`` blocks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from inference.modelbuild.onnx_graph import drop_unused

PREFIX = "/model/layers.{i}/mlp"


class PackingError(RuntimeError):
    """The export does not have the MLP layout this packing expects."""


def pack_gate_up(model, config: dict[str, Any]) -> dict[str, Any]:
    """Pack every layer's gate/up MatMuls of the ``onnx.ModelProto`` ``model`` in place; returns a summary."""
    from onnx import helper, numpy_helper  # the build extra: imported by a build only

    graph = model.graph
    by_name = {n.name: n for n in graph.node}
    inits = {i.name: i for i in graph.initializer}
    layers = config["num_hidden_layers"]
    intermediate = config["intermediate_size"]
    nodes_before = len(graph.node)
    new_inits: list[Any] = [numpy_helper.from_array(np.array([intermediate, intermediate], np.int64), "/mlp/split")]
    replaced: dict[str, list[Any]] = {}  # gate MatMul name → the nodes taking its place (up's is dropped)
    dropped: set[str] = set()
    for i in range(layers):
        p = PREFIX.format(i=i)
        gate, up = by_name.get(f"{p}/gate_proj/MatMul"), by_name.get(f"{p}/up_proj/MatMul")
        if gate is None or up is None or gate.input[1] not in inits or up.input[1] not in inits:
            raise PackingError(f"layer {i}: no gate_proj/up_proj MatMuls with constant weights")
        if gate.input[0] != up.input[0]:
            raise PackingError(f"layer {i}: gate and up do not project the same input")
        weight = np.concatenate([numpy_helper.to_array(inits[n.input[1]]) for n in (gate, up)], axis=1)  # [K, 2 I]
        packed = f"{p}/gate_up_proj/MatMul_output_0"
        new_inits.append(numpy_helper.from_array(weight, f"{p}/gate_up_proj/weight"))
        replaced[gate.name] = [
            helper.make_node("MatMul", [gate.input[0], f"{p}/gate_up_proj/weight"], [packed], name=f"{p}/gate_up_proj/MatMul"),
            helper.make_node(
                "Split", [packed, "/mlp/split"], [gate.output[0], up.output[0]], name=f"{p}/gate_up_proj/Split", axis=-1
            ),
        ]
        dropped.add(up.name)
    nodes = []
    for node in graph.node:
        if node.name in replaced:
            nodes += replaced[node.name]  # where gate was: its input is ready, its users come later
        elif node.name not in dropped:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(new_inits)
    drop_unused(model)
    return {
        "method": "gate and up projections packed into one MatMul + Split per layer",
        "layers": layers,
        "nodes_before": nodes_before,
        "nodes_after": len(graph.node),
    }
