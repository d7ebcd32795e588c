"""Let the caller choose how many positions get logits: the output head only where it is needed.

The export computes the output head (hidden → 49152 logits) for every position fed. A prefill of
512 tokens then spends about a third of its time, and 100 MB, on 511 rows nobody reads. This
adds one int64 input, ``logits_to_keep`` (a scalar, as transformers names it), and slices the
final norm's output before the head:

    hidden[:, -logits_to_keep:, :]      (0 keeps every position)

so ``logits`` is ``[B, logits_to_keep or S, V]``. The engine passes 1 for generation; scoring a
prompt passes 0 and gets every position's logits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from inference.modelbuild.attention import topological
from inference.modelbuild.onnx_graph import drop_unused

INPUT = "logits_to_keep"
PREFIX = "/logits_to_keep"


class HeadError(RuntimeError):
    """The graph has no single node producing ``logits`` from the final hidden states."""


def keep_last_positions(model) -> dict[str, Any]:
    """Insert the slice in front of the node producing ``logits`` in the ``onnx.ModelProto`` ``model``."""
    from onnx import TensorProto, helper, numpy_helper  # heavy, the build extra: imported by a build only

    graph = model.graph
    head = [n for n in graph.node if "logits" in n.output]
    if len(head) != 1:
        raise HeadError(f"expected one node producing logits, found {len(head)}")
    head = head[0]
    hidden = head.input[0]  # [B, S, hidden]
    sliced = f"{PREFIX}/Slice_output_0"
    graph.node.extend(
        [
            helper.make_node("Neg", [INPUT], [f"{PREFIX}/start"], name=f"{PREFIX}/Neg"),
            helper.make_node("Reshape", [f"{PREFIX}/start", f"{PREFIX}/one"], [f"{PREFIX}/starts"], name=f"{PREFIX}/Reshape"),
            helper.make_node(
                "Slice", [hidden, f"{PREFIX}/starts", f"{PREFIX}/ends", f"{PREFIX}/axes"], [sliced], name=f"{PREFIX}/Slice"
            ),
        ]
    )
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array([1], np.int64), f"{PREFIX}/one"),
            numpy_helper.from_array(np.array([np.iinfo(np.int64).max], np.int64), f"{PREFIX}/ends"),
            numpy_helper.from_array(np.array([1], np.int64), f"{PREFIX}/axes"),
        ]
    )
    head.input[0] = sliced
    graph.input.append(helper.make_tensor_value_info(INPUT, TensorProto.INT64, []))
    _sort(model)
    drop_unused(model)
    return {"method": f"Slice of the head's input to the last `{INPUT}` positions (0: all)", "input": INPUT}


def _sort(model) -> None:
    """Topological order again (the new nodes were appended at the end)."""
    graph = model.graph
    available = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    nodes = topological(list(graph.node), available)
    del graph.node[:]
    graph.node.extend(nodes)
