"""Per-op micro-bench: ``python -m inference.kernels.bench`` prints JSON.

Microseconds per ``session.run`` of one node (median over interleaved rounds, each round's figure the
median of its calls) for SmolLM2's matrix shapes at M = 1 and 8: our MatMulGguf (``exact`` and
``fast``; Q4_1 layers, the Q8_0 head) against ONNX Runtime's MatMulNBits at ``accuracy_level`` 0
(fp32 activations) and 4 (int8 activations), 4-bit symmetric for the layers and 8-bit for the head
(without Q4_1's offset term: a lower bound on what today's exact graph pays), and for the head the
plain fp32 MatMul today's exact build runs. Random weights;
single-threaded unless ``--threads``. Needs the ``build`` extra (onnx).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

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
BLOCK_BYTES = {"Q4_1": 20, "Q8_0": 34}


def _model(node: helper.NodeProto, inits: list[TensorProto], k: int, n: int, opsets: list) -> bytes:
    a = helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", k])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", n])
    graph = helper.make_graph([node], "bench", [a], [y], initializer=inits)
    return helper.make_model(graph, opset_imports=opsets, ir_version=10).SerializeToString()


def ours(k: int, n: int, fmt: str, mode: str, rng: np.random.Generator) -> bytes:
    raw = rng.integers(0, 256, (n, k // 32, BLOCK_BYTES[fmt]), dtype=np.uint8)
    scales = rng.uniform(0.001, 0.01, (n, k // 32, 2)).astype(np.float16).view(np.uint8)  # [n, k/32, 4]
    raw[..., 0 : 4 if fmt == "Q4_1" else 2] = scales[..., : 4 if fmt == "Q4_1" else 2]
    b = helper.make_tensor("B", TensorProto.UINT8, (n, raw.shape[1] * raw.shape[2]), raw.tobytes(), raw=True)
    node = helper.make_node(OP, ["A", "B"], ["Y"], domain=DOMAIN, format=fmt, mode=mode, K=k, N=n)
    return _model(node, [b], k, n, [helper.make_opsetid("", 21), helper.make_opsetid(DOMAIN, 1)])


def matmulnbits(k: int, n: int, bits: int, level: int, rng: np.random.Generator) -> bytes:
    blocks = k // 32
    packed = rng.integers(0, 256, (n, blocks, 32 * bits // 8), dtype=np.uint8)
    scales = rng.uniform(0.001, 0.01, n * blocks).astype(np.float32)
    inits = [
        helper.make_tensor("B", TensorProto.UINT8, packed.shape, packed.tobytes(), raw=True),
        helper.make_tensor("scales", TensorProto.FLOAT, scales.shape, scales.tobytes(), raw=True),
    ]
    node = helper.make_node(
        "MatMulNBits", ["A", "B", "scales"], ["Y"], domain="com.microsoft",
        K=k, N=n, bits=bits, block_size=32, accuracy_level=level,
    )  # fmt: skip
    return _model(node, inits, k, n, [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])


def fp32_matmul(k: int, n: int, rng: np.random.Generator) -> bytes:
    """Today's exact head: a plain MatMul on the fp32 table."""
    w = rng.standard_normal((k, n), dtype=np.float32)
    node = helper.make_node("MatMul", ["A", "W"], ["Y"])
    inits = [helper.make_tensor("W", TensorProto.FLOAT, w.shape, w.tobytes(), raw=True)]
    return _model(node, inits, k, n, [helper.make_opsetid("", 21)])


def session(model: bytes, threads: int, library: str | None) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if library:
        options.register_custom_ops_library(library)
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def time_calls(sess: ort.InferenceSession, x: np.ndarray, calls: int) -> float:
    """Median µs of `calls` runs."""
    feed = {"A": x}
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
    args = parser.parse_args()

    library = library_path()
    rng = np.random.default_rng(0)
    cases: dict[tuple[str, int, str], ort.InferenceSession] = {}
    inputs: dict[tuple[str, int], np.ndarray] = {}
    rows = tuple(int(m) for m in args.rows.split(","))
    for name, k, n, fmt in (shape for shape in SHAPES if shape[0] in args.matrices.split(",")):
        bits = 4 if fmt == "Q4_1" else 8
        models = {"MatMulNBits level 0": matmulnbits(k, n, bits, 0, rng), "MatMulNBits level 4": matmulnbits(k, n, bits, 4, rng)}
        if fmt == "Q8_0":
            models["fp32 MatMul"] = fp32_matmul(k, n, rng)
        if library:
            models = {"ours exact": ours(k, n, fmt, "exact", rng), "ours fast": ours(k, n, fmt, "fast", rng), **models}
        for variant, model in models.items():
            sess = session(model, args.threads, str(library) if library else None)
            for m in rows:
                cases[(name, m, variant)] = sess
                inputs[(name, m)] = rng.standard_normal((m, k), dtype=np.float32)
    rounds: dict[tuple[str, int, str], list[float]] = {key: [] for key in cases}
    for _ in range(args.rounds):
        for key, sess in cases.items():
            rounds[key].append(time_calls(sess, inputs[key[:2]], args.calls))
    shapes = {name: (k, n, fmt) for name, k, n, fmt in SHAPES}
    results = [
        {
            "matrix": name,
            "K": shapes[name][0],
            "N": shapes[name][1],
            "format": shapes[name][2],
            "M": m,
            "variant": variant,
            "us_median": round(statistics.median(v), 1),
            "us_min": round(min(v), 1),
            "us_max": round(max(v), 1),
        }  # fmt: skip
        for (name, m, variant), v in rounds.items()
    ]
    report = {
        "kernels": describe(),
        "statistic": "us per session.run: median over rounds of each round's median call",
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
