"""Whether every node of a graph has a CUDA kernel for its element types, checked at build time.

The CPU ``onnxruntime`` installed here holds no CUDA kernels to ask, so the facts come from a table
kept in the repository (``cuda_kernels.json``: ONNX Runtime's published CUDA kernel list, its source
named inside). A node ONNX Runtime would run on the CPU instead (an operator without a CUDA kernel,
or one whose kernel does not take the node's types, e.g. GroupQueryAttention in float32) fails the
check with its name, so the GPU build fails rather than copying tensors between devices every step.

Which type each of a node's type parameters (``T``, ``T1``, ``T_CACHE`` …) takes is read from the
operator schemas the installed ONNX Runtime registers (ONNX's and its contrib ops' alike), the
element type of every tensor being carried forward from the graph's inputs and initializers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

TABLE_FILE = Path(__file__).with_name("cuda_kernels.json")
ONNX_DOMAIN = "ai.onnx"


class CudaKernelError(ValueError):
    """Nodes of a graph meant for the CUDA provider that have no CUDA kernel for their types."""


@dataclass(frozen=True)
class Unsupported:
    node: str  # the node's name
    op: str  # domain:op_type
    why: str

    def __str__(self) -> str:
        return f"{self.node} ({self.op}): {self.why}"


@cache
def kernel_table() -> dict[str, Any]:
    """The CUDA kernel table (``cuda_kernels.json``)."""
    return json.loads(TABLE_FILE.read_text())


@cache
def _schemas() -> dict[tuple[str, str], list[Any]]:
    """ONNX Runtime's registered operator schemas by (domain, op), each list newest first."""
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_c

    by_op: dict[tuple[str, str], list[Any]] = {}
    for schema in ort_c.get_all_operator_schema():
        by_op.setdefault((schema.domain or ONNX_DOMAIN, schema.name), []).append(schema)
    for versions in by_op.values():
        versions.sort(key=lambda s: -s.since_version)
    return by_op


def _schema(domain: str, op: str, opset: int) -> Any | None:
    return next((s for s in _schemas().get((domain, op), []) if s.since_version <= opset), None)


def _elem(onnx_type: int) -> str:
    """An ONNX TensorProto element type as the table names it (``float``, ``float16``, ``int64`` …)."""
    import onnx

    return onnx.helper.tensor_dtype_to_string(onnx_type).removeprefix("TensorProto.").lower()


def _fixed(type_str: str) -> str | None:
    """``tensor(int64)`` → ``int64``; a type parameter's name → None."""
    return type_str[len("tensor(") : -1] if type_str.startswith("tensor(") else None


def element_types(model: Any) -> dict[str, str]:
    """The element type of every tensor of ``model`` (an ``onnx.ModelProto``), by name, carried
    forward node by node (the graph is topologically sorted) through each operator's schema."""
    graph = model.graph
    opsets = {(o.domain or ONNX_DOMAIN): o.version for o in model.opset_import}
    types: dict[str, str] = {}
    for value in [*graph.input, *graph.value_info]:
        if value.type.tensor_type.elem_type:
            types[value.name] = _elem(value.type.tensor_type.elem_type)
    for init in graph.initializer:
        types[init.name] = _elem(init.data_type)
    for node in graph.node:
        domain = node.domain or ONNX_DOMAIN
        attrs = {a.name: a for a in node.attribute}
        if node.op_type == "Constant":
            types[node.output[0]] = _elem(attrs["value"].t.data_type)
            continue
        schema = _schema(domain, node.op_type, opsets.get(domain, 1))
        if schema is None:
            continue  # unknown here: the check names it
        bound = _bind(node, schema, types)
        for j, name in enumerate(node.output):
            if not name:
                continue
            if node.op_type == "Cast" and j == 0:
                types[name] = _elem(attrs["to"].i)
            elif node.op_type == "ConstantOfShape":
                types[name] = _elem(attrs["value"].t.data_type) if "value" in attrs else "float"
            else:
                formal = schema.outputs[min(j, len(schema.outputs) - 1)].typeStr
                allowed = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}.get(formal, [])
                known = _fixed(formal) or bound.get(formal) or (_fixed(allowed[0]) if len(allowed) == 1 else None)
                if known is not None:
                    types[name] = known
    return types


def _bind(node: Any, schema: Any, types: dict[str, str]) -> dict[str, str]:
    """Each type parameter of ``schema`` to the type of the first of ``node``'s tensors that takes it."""
    bound: dict[str, str] = {}
    for i, name in enumerate(node.input):
        if name and name in types and schema.inputs:
            formal = schema.inputs[min(i, len(schema.inputs) - 1)].typeStr
            if _fixed(formal) is None:
                bound.setdefault(formal, types[name])
    return bound


def _row(domain: str, op: str, opset: int) -> dict[str, Any] | None:
    rows = kernel_table()["ops"].get(domain, {}).get(op, [])
    return next((r for r in rows if r["since"] <= opset and (r["until"] is None or opset <= r["until"])), None)


def unsupported_nodes(model: Any) -> list[Unsupported]:
    """The nodes of ``model`` that the CUDA provider has no kernel for, at their opset and types."""
    opsets = {(o.domain or ONNX_DOMAIN): o.version for o in model.opset_import}
    types = element_types(model)
    kernel_free = set(kernel_table()["kernel_free"])
    found: list[Unsupported] = []
    for node in model.graph.node:
        domain, op = node.domain or ONNX_DOMAIN, node.op_type
        label = f"{domain}:{op}"
        if op in kernel_free and domain == ONNX_DOMAIN:
            continue
        row = _row(domain, op, opsets.get(domain, 1))
        if row is None:
            found.append(Unsupported(node.name, label, f"no CUDA kernel at opset {opsets.get(domain)}"))
            continue
        schema = _schema(domain, op, opsets.get(domain, 1))
        if schema is None:
            found.append(Unsupported(node.name, label, "no schema in the installed ONNX Runtime to read its types"))
            continue
        bound = _bind(node, schema, types)
        for j, name in enumerate(node.output):
            formal = schema.outputs[min(j, len(schema.outputs) - 1)].typeStr if schema.outputs else ""
            if name and name in types and _fixed(formal) is None:
                bound.setdefault(formal, types[name])
        for param, elem in sorted(bound.items()):
            allowed = row["types"].get(param)
            if allowed is not None and elem not in allowed:
                found.append(Unsupported(node.name, label, f"{param}={elem}; its CUDA kernel takes {', '.join(allowed)}"))
    return found


def check(model: Any) -> dict[str, Any]:
    """Raises :class:`CudaKernelError` naming every node without a CUDA kernel for its types;
    otherwise returns what the manifest records (the table's source, nodes checked, operators)."""
    missing = unsupported_nodes(model)
    if missing:
        shown = "; ".join(str(m) for m in missing[:20])
        more = f" (and {len(missing) - 20} more)" if len(missing) > 20 else ""
        raise CudaKernelError(f"{len(missing)} nodes have no CUDA kernel for their types: {shown}{more}")
    ops = sorted({f"{n.domain or ONNX_DOMAIN}:{n.op_type}" for n in model.graph.node})
    return {"table": kernel_table()["source"], "nodes_checked": len(model.graph.node), "ops": ops}
