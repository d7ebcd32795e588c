"""Small edits shared by the graph rewrites (attention fusion, lossless MatMulNBits)."""

from __future__ import annotations


def drop_unused(model) -> None:
    """Removes nodes whose outputs nothing uses (repeatedly) and initializers nothing reads."""
    graph = model.graph
    outputs = {o.name for o in graph.output}
    while True:
        used = {i for n in graph.node for i in n.input} | outputs
        dead = [n for n in graph.node if not any(o in used for o in n.output)]
        if not dead:
            break
        for n in dead:
            graph.node.remove(n)
    used = {i for n in graph.node for i in n.input} | outputs
    for init in [i for i in graph.initializer if i.name not in used]:
        graph.initializer.remove(init)
