"""Replace each layer's spelled-out tanh GELU (Gemma's ``gelu_pytorch_tanh``) with one ``FastGelu``.

The export writes ``0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`` as nine nodes under
``/model/layers.{i}/mlp/act_fn/`` (six Mul, two Add, one Tanh, with their constants). ONNX Runtime's
``FastGelu`` (com.microsoft) computes the same formula in one fp32 kernel (its constants
√(2/π) and 0.044715 · √(2/π); the order of operations, hence the last bit, may differ). The output
keeps its name, so the ``up`` product after it is untouched.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from inference.modelbuild.onnx_graph import drop_unused

PREFIX = "/model/layers.{i}/mlp/act_fn"
MS_DOMAIN = "com.microsoft"
TANH_GELU_OPS = Counter({"Mul": 6, "Add": 2, "Tanh": 1})  # besides Constant nodes


class GeluError(RuntimeError):
    """The export does not have the tanh GELU this fusion expects (nothing is changed then)."""


def fuse(model, config: dict[str, Any]) -> dict[str, Any]:
    """Fuse every layer's tanh GELU of the ``onnx.ModelProto`` ``model`` in place; returns a summary."""
    from onnx import helper  # the build extra: imported by a build only

    if config.get("hidden_activation") != "gelu_pytorch_tanh":
        raise GeluError(f"hidden_activation {config.get('hidden_activation')!r} is not gelu_pytorch_tanh")
    graph = model.graph
    nodes_before = len(graph.node)
    inits = {i.name for i in graph.initializer}
    replaced: dict[str, Any] = {}  # name of the GELU's last node → FastGelu
    for i in range(config["num_hidden_layers"]):
        p = PREFIX.format(i=i) + "/"
        inside = [n for n in graph.node if n.name.startswith(p)]
        computing = [n for n in inside if n.op_type != "Constant"]
        if Counter(n.op_type for n in computing) != TANH_GELU_OPS:
            raise GeluError(f"layer {i}: {p} is not the export's tanh GELU ({Counter(n.op_type for n in computing)})")
        made = {o for n in inside for o in n.output}
        sources = {x for n in computing for x in n.input if x not in made and x not in inits}
        used_outside = {x for n in graph.node if not n.name.startswith(p) for x in n.input} | {o.name for o in graph.output}
        results = [n for n in computing if n.output[0] in used_outside]
        if len(sources) != 1 or len(results) != 1:
            raise GeluError(f"layer {i}: the GELU reads {sorted(sources)} and gives {[n.output[0] for n in results]}")
        last = results[0]
        replaced[last.name] = helper.make_node(
            "FastGelu", [sources.pop()], [last.output[0]], name=f"{p}FastGelu", domain=MS_DOMAIN
        )
    nodes = [replaced.get(n.name, n) for n in graph.node]  # where the last node was: its input is ready
    del graph.node[:]
    graph.node.extend(nodes)
    drop_unused(model)
    if not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return {
        "method": "the export's tanh GELU (9 nodes) → FastGelu (com.microsoft) per layer",
        "layers": config["num_hidden_layers"],
        "nodes_before": nodes_before,
        "nodes_after": len(graph.node),
    }
