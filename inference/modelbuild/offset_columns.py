"""An experiment on a built `fast` graph: Q4_1's offsets carried as extra input columns of the main
``MatMulNBits`` instead of the side path (issue 21; docs/model.md, "Carrying the offset more cheaply").

    python -m inference.modelbuild.offset_columns BUILT/model.onnx OUT/model.onnx --bits 12 [--fp32-layers 28,29]

``lossless.convert`` computes ``y = MatMulNBits(x) + blocksums(x) @ offsets`` (a block-sum MatMul,
an offset MatMul and an Add per projection). Here each projection becomes

    x' = x ‖ blocksums(x) ‖ … (``bits / 4`` copies, each padded to whole blocks of 32)
    y  = MatMulNBits(x', W ‖ offset nibbles)

with the offsets quantized per row and per 32 extra columns to ``bits`` bits, split into 4-bit
nibbles whose blocks have scales ``s``, ``16 s``, ``256 s``: value ``s (v − c)`` with
``v = Σ_i 16^i nibble_i`` and ``c = Σ_i 8 · 16^i`` (the default zero point 8 in every block). One
indicator MatMul and a Concat per distinct input replace 2 nodes per projection. Not exact: the
offsets lose ``bits``' precision, and at ``accuracy_level`` 4 the block sums are quantized to int8
with the rest of their block. Not a variant: measured, it is no faster than `fast` at `fast`'s
fidelity (12 bits) or faster and far less faithful (4, 8 bits). Standard ``onnx`` and numpy only;
the input model is one the build made (its names are ``lossless.convert``'s).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

BLOCK = 32
CHOICES = (4, 8, 12)


def nibble_blocks(offsets: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """``offsets`` [N, nb] as 4-bit codes [N, copies · blocks, 32] (0..15) and scales [N, copies · blocks]:
    ``copies = bits / 4`` nibbles of ``v = rint(offset / s) + c``, ``s`` per row and 32 offsets."""
    copies = bits // 4
    n, nb = offsets.shape
    blocks = -(-nb // BLOCK)
    padded = np.zeros((n, blocks * BLOCK), np.float32)
    padded[:, :nb] = offsets
    padded = padded.reshape(n, blocks, BLOCK)  # [N, blocks, 32]
    center = 8 * sum(16**i for i in range(copies))
    top = 16**copies - 1
    largest = np.abs(padded).max(axis=-1)  # [N, blocks]
    scale = np.where(largest > 0, largest / (top - center), 1.0).astype(np.float32)
    v = np.clip(np.rint(padded / scale[..., None]) + center, 0, top).astype(np.int64)
    codes = np.concatenate([(v // 16**i) % 16 for i in range(copies)], axis=1).astype(np.uint8)
    scales = np.concatenate([scale * np.float32(16**i) for i in range(copies)], axis=1)
    return codes, scales


def pack(codes: np.ndarray) -> np.ndarray:
    """4-bit codes [N, blocks, 32] as MatMulNBits' bytes [N, blocks, 16], low nibble first."""
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def rewrite(model: Any, bits: int, fp32_layers: tuple[int, ...] = ()) -> int:
    """Rewrites the ``onnx.ModelProto`` in place (see the module's docstring); returns the projections
    rewritten. ``fp32_layers``: layers whose MatMulNBits get ``accuracy_level`` 0."""
    from onnx import helper, numpy_helper

    if bits not in CHOICES:
        raise ValueError(f"bits must be one of {CHOICES}")
    copies = bits // 4
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    nodes = list(graph.node)
    producer = {o: n for n in nodes for o in n.output}
    by_name = {n.name: n for n in nodes}
    before: dict[str, list[Any]] = {}  # node name → nodes to put before it
    concat_of: dict[str, str] = {}  # input → its x ‖ block sums
    dropped: set[str] = set()
    new_inits: list[Any] = []
    rewritten = 0
    for node in nodes:
        add = by_name.get(node.name.rsplit("/", 1)[0] + "/Add")
        if node.op_type != "MatMulNBits" or add is None:
            continue
        offset_mm = producer[add.input[1]]
        sums_mm = producer[offset_mm.input[0]]
        attrs = {a.name: a for a in node.attribute}
        k, n = attrs["K"].i, attrs["N"].i
        offsets = numpy_helper.to_array(inits[offset_mm.input[1]]).T  # [N, K / 32]
        blocks = -(-(k // BLOCK) // BLOCK)
        x = node.input[0]
        if x not in concat_of:
            indicator = np.zeros((k, copies * blocks * BLOCK), np.float32)  # [K, extra]
            for copy in range(copies):
                indicator[np.arange(k), copy * blocks * BLOCK + np.arange(k) // BLOCK] = 1.0
            base = f"/offset_columns/{len(concat_of)}"
            new_inits.append(numpy_helper.from_array(indicator, f"{base}/indicator"))
            before[node.name] = [
                helper.make_node("MatMul", [x, f"{base}/indicator"], [f"{base}/sums"], name=f"{base}/MatMul"),
                helper.make_node("Concat", [x, f"{base}/sums"], [f"{base}/x"], name=f"{base}/Concat", axis=-1),
            ]
            concat_of[x] = f"{base}/x"
        codes, scales = nibble_blocks(offsets, bits)
        b = numpy_helper.to_array(inits[node.input[1]])  # [N, K / 32, 16]
        s = numpy_helper.to_array(inits[node.input[2]]).reshape(n, k // BLOCK)
        name = node.name.rsplit("/", 1)[0] + "/offset_columns"
        new_inits.append(numpy_helper.from_array(np.concatenate([b, pack(codes)], axis=1), f"{name}/B"))
        new_inits.append(numpy_helper.from_array(np.concatenate([s, scales], axis=1).reshape(-1), f"{name}/scales"))
        attrs["K"].i = k + copies * blocks * BLOCK
        if any(f"/layers.{layer}/" in node.name for layer in fp32_layers):
            attrs["accuracy_level"].i = 0
        node.input[0], node.input[1], node.input[2] = concat_of[x], f"{name}/B", f"{name}/scales"
        node.output[0] = add.output[0]
        dropped |= {add.name, offset_mm.name, sums_mm.name}
        rewritten += 1
    kept = [m for n in nodes for m in [*before.get(n.name, []), n] if m.name not in dropped]
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(new_inits)
    used = {i for n in graph.node for i in n.input}
    live = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(live)
    return rewritten


def main(argv: list[str] | None = None) -> int:
    import onnx

    parser = argparse.ArgumentParser(prog="python -m inference.modelbuild.offset_columns", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a built fast model.onnx")
    parser.add_argument("out", type=Path, help="where to write the rewritten model.onnx")
    parser.add_argument("--bits", type=int, choices=CHOICES, default=12)
    parser.add_argument("--fp32-layers", default="", help="e.g. 28,29: these layers' MatMulNBits at accuracy_level 0")
    args = parser.parse_args(argv)
    model = onnx.load(str(args.model))
    layers = tuple(int(x) for x in args.fp32_layers.split(",") if x)
    count = rewrite(model, args.bits, layers)
    onnx.save(model, str(args.out))
    print(f"{count} projections rewritten, {len(model.graph.node)} nodes: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
