"""Per-op micro-bench: ``python -m inference.kernels.bench`` prints JSON.

Microseconds per ``session.run`` (median over interleaved rounds, each round's figure the median of
its calls) of one node for SmolLM2's matrix shapes at M = 1 and 8: our MatMulGguf (``exact`` and
``fast``; Q4_1 layers, the Q8_0 head) against ONNX Runtime's MatMulNBits at ``accuracy_level`` 0
(fp32 activations) and 4 (int8 activations), 4-bit symmetric for the layers and 8-bit for the head
(without Q4_1's offset term: a lower bound on what today's graphs pay), and for the head the plain
fp32 MatMul today's exact build runs. ``--step`` adds a whole decoder step's matrix products (30
layers' distinct weights, streamed from memory as in decoding, and the head) in one graph:
today's exact build (MatMulNBits level 0, fp32 head), today's fast one (level 4), ours exact and
fast. Random weights; single-threaded unless ``--threads``. Needs the ``build`` extra (onnx).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from .library import DOMAIN, OP, describe, library_path

# (name, K, N, GGUF format): SmolLM2-135M's matrices and its tied head.
SHAPES = (
    ("qkv", 576, 960, "Q4_1"),
    ("gate_up", 576, 3072, "Q4_1"),
    ("down", 1536, 576, "Q4_1"),
    ("o", 576, 576, "Q4_1"),
    ("head", 576, 49152, "Q8_0"),
)
LAYERS = 30
BLOCK_BYTES = {"Q4_1": 20, "Q8_0": 34}
OPSETS = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1), helper.make_opsetid(DOMAIN, 1)]

Node = tuple[helper.NodeProto, list[TensorProto]]
# A way to compute one matrix product: (prefix, input, output, K, N, format, rng) -> the node.
Variant = Callable[[str, str, str, int, int, str, np.random.Generator], Node]


def ours(mode: str) -> Variant:
    def node(prefix: str, a: str, y: str, k: int, n: int, fmt: str, rng: np.random.Generator) -> Node:
        raw = rng.integers(0, 256, (n, k // 32, BLOCK_BYTES[fmt]), dtype=np.uint8)
        fields = 4 if fmt == "Q4_1" else 2  # d (and m): finite fp16 scales
        raw[..., :fields] = rng.uniform(0.001, 0.01, (n, k // 32, 2)).astype(np.float16).view(np.uint8)[..., :fields]
        b = helper.make_tensor(f"{prefix}B", TensorProto.UINT8, (n, raw.shape[1] * raw.shape[2]), raw.tobytes(), raw=True)
        return helper.make_node(OP, [a, b.name], [y], domain=DOMAIN, format=fmt, mode=mode, K=k, N=n), [b]

    return node


def matmulnbits(level: int, fp32_head: bool = False) -> Variant:
    def node(prefix: str, a: str, y: str, k: int, n: int, fmt: str, rng: np.random.Generator) -> Node:
        if fp32_head and fmt == "Q8_0":
            return fp32_matmul(prefix, a, y, k, n, fmt, rng)
        bits = 4 if fmt == "Q4_1" else 8
        packed = rng.integers(0, 256, (n, k // 32, 32 * bits // 8), dtype=np.uint8)
        scales = rng.uniform(0.001, 0.01, n * k // 32).astype(np.float32)
        inits = [
            helper.make_tensor(f"{prefix}B", TensorProto.UINT8, packed.shape, packed.tobytes(), raw=True),
            helper.make_tensor(f"{prefix}scales", TensorProto.FLOAT, scales.shape, scales.tobytes(), raw=True),
        ]
        return helper.make_node(
            "MatMulNBits", [a, inits[0].name, inits[1].name], [y], domain="com.microsoft",
            K=k, N=n, bits=bits, block_size=32, accuracy_level=level,
        ), inits  # fmt: skip

    return node


def fp32_matmul(prefix: str, a: str, y: str, k: int, n: int, fmt: str, rng: np.random.Generator) -> Node:
    """Today's exact head: a plain MatMul on the fp32 table."""
    w = rng.standard_normal((k, n), dtype=np.float32)
    init = helper.make_tensor(f"{prefix}W", TensorProto.FLOAT, w.shape, w.tobytes(), raw=True)
    return helper.make_node("MatMul", [a, init.name], [y]), [init]


def graph(nodes: list[Node], inputs: dict[str, int], outputs: dict[str, int]) -> bytes:
    """One model: float inputs [M, K] and outputs [M, N] by name."""
    graph = helper.make_graph(
        [node for node, _ in nodes],
        "bench",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["M", k]) for name, k in inputs.items()],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["M", n]) for name, n in outputs.items()],
        initializer=[init for _, inits in nodes for init in inits],
    )
    return helper.make_model(graph, opset_imports=OPSETS, ir_version=10).SerializeToString()


def one_op(variant: Variant, k: int, n: int, fmt: str, rng: np.random.Generator) -> bytes:
    return graph([variant("", "A", "Y", k, n, fmt, rng)], {"A": k}, {"Y": n})


def step(variant: Variant, rng: np.random.Generator) -> bytes:
    """A decoder step's matrix products: every layer's own weights, the head; inputs A [M, 576], H [M, 1536]."""
    nodes, outputs = [], {}
    for layer in range(LAYERS):
        for name, k, n, fmt in SHAPES[:4]:
            prefix = f"l{layer}.{name}."
            nodes.append(variant(prefix, "H" if k == 1536 else "A", f"{prefix}Y", k, n, fmt, rng))
            outputs[f"{prefix}Y"] = n
    name, k, n, fmt = SHAPES[4]
    nodes.append(variant("head.", "A", "head.Y", k, n, fmt, rng))
    outputs["head.Y"] = n
    return graph(nodes, {"A": 576, "H": 1536}, outputs)


def session(model: bytes, threads: int, library: str | None) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if library:
        options.register_custom_ops_library(library)
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def time_calls(sess: ort.InferenceSession, feed: dict[str, np.ndarray], calls: int) -> float:
    """Median µs of `calls` runs (after one not counted)."""
    sess.run(None, feed)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        sess.run(None, feed)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--calls", type=int, default=20, help="calls per case and round (default 20)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    parser.add_argument("--rows", default="1,8", help="values of M, comma-separated (default 1,8)")
    parser.add_argument("--matrices", default=",".join(name for name, *_ in SHAPES), help="which matrices (default all)")
    parser.add_argument("--step", action="store_true", help="also a whole step's matrix products (30 layers and the head)")
    args = parser.parse_args()

    library = library_path()
    lib = str(library) if library else None
    rng = np.random.default_rng(0)
    rows = tuple(int(m) for m in args.rows.split(","))
    variants: dict[str, Variant] = {"MatMulNBits level 0": matmulnbits(0), "MatMulNBits level 4": matmulnbits(4)}
    if lib:
        variants = {"ours exact": ours("exact"), "ours fast": ours("fast"), **variants}
    cases: dict[tuple[str, int, str], tuple[ort.InferenceSession, dict[str, np.ndarray]]] = {}
    for name, k, n, fmt in (shape for shape in SHAPES if shape[0] in args.matrices.split(",")):
        ways = {**variants, **({"fp32 MatMul": fp32_matmul} if fmt == "Q8_0" else {})}
        for label, variant in ways.items():
            sess = session(one_op(variant, k, n, fmt, rng), args.threads, lib)
            for m in rows:
                cases[(name, m, label)] = (sess, {"A": rng.standard_normal((m, k), dtype=np.float32)})
    if args.step:
        ways = {"today's exact (level 0, fp32 head)": matmulnbits(0, fp32_head=True), "today's fast (level 4)": matmulnbits(4)}
        if lib:
            ways = {"ours exact": ours("exact"), "ours fast": ours("fast"), **ways}
        for label, variant in ways.items():
            sess = session(step(variant, rng), args.threads, lib)
            for m in rows:
                feed = {
                    "A": rng.standard_normal((m, 576), dtype=np.float32),
                    "H": rng.standard_normal((m, 1536), dtype=np.float32),
                }
                cases[("step", m, label)] = (sess, feed)
    rounds: dict[tuple[str, int, str], list[float]] = {key: [] for key in cases}
    for _ in range(args.rounds):
        for key, (sess, feed) in cases.items():
            rounds[key].append(time_calls(sess, feed, args.calls))
    shapes = {name: (k, n, fmt) for name, k, n, fmt in SHAPES} | {"step": (None, None, "Q4_1 layers, Q8_0 head")}
    results = [
        {
            "matrix": name,
            "K": shapes[name][0],
            "N": shapes[name][1],
            "format": shapes[name][2],
            "M": m,
            "variant": label,
            "us_median": round(statistics.median(v), 1),
            "us_min": round(min(v), 1),
            "us_max": round(max(v), 1),
        }  # fmt: skip
        for (name, m, label), v in rounds.items()
    ]
    report = {
        "kernels": describe(),
        "statistic": "us per session.run: median over rounds of each round's median call (min, max: of the rounds)",
        "threads": args.threads,
        "rounds": args.rounds,
        "calls": args.calls,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "onnxruntime": ort.__version__,
        "results": results,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
