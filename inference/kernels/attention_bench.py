"""Attention micro-bench: ``python -m inference.kernels.attention_bench`` prints JSON.

Microseconds per call of one attention node, our ``GroupAttention`` against ONNX Runtime's
``GroupQueryAttention`` on the same inputs, the cache bound in place as the engine binds it: decode
steps at batch 1 and 8 over contexts of 60, 100 and 800 tokens, and a 512-token prompt, for
SmolLM2's heads (9 query heads over 3 kv heads of 64, packed q/k/v) and Gemma 3 270M's (4 over 1 of
256, separate q/k/v). Each figure is the best of ``--rounds`` rounds, each round's the mean of its
calls; two threads unless ``--threads``. Random inputs; needs the ``build`` extra (onnx).
"""

from __future__ import annotations

import argparse
import json
import time

import onnxruntime as ort

from .attention_probe import Call, Shape, bind_in_place, session
from .library import library_path

SHAPES = {
    "smollm2": Shape(positions=2048),
    "gemma": Shape(heads=4, kv_heads=1, head_dim=256, packed=False, scale=1 / 16, positions=2048),
}
CASES = ((1, 60, 1), (8, 60, 1), (1, 100, 1), (8, 100, 1), (1, 800, 1), (8, 800, 1), (1, 512, 512))  # (B, context, S)


def per_call_us(sess: ort.InferenceSession, binding: ort.IOBinding, calls: int, rounds: int) -> float:
    for _ in range(min(calls, 20)):
        sess.run_with_iobinding(binding)
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            sess.run_with_iobinding(binding)
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    library = library_path()
    if library is None:
        raise SystemExit("the kernel library is not built (source scripts/env.sh)")
    rows = []
    for label, shape in SHAPES.items():
        for batch, context, new in CASES:
            call = Call(shape, [context] * batch, new, 1024, first=new == context)
            figures = {}
            for ours in (False, True):
                sess = session(shape.model(ours=ours), str(library) if ours else None, args.threads)
                binding = bind_in_place(sess, call.feeds())[0]
                figures[ours] = per_call_us(sess, binding, 200 if new == 1 else 3, args.rounds)
            rows.append({"shape": label, "batch": batch, "context": context, "new_tokens": new,
                         "group_query_attention_us": round(figures[False], 1), "ours_us": round(figures[True], 1),
                         "speedup": round(figures[False] / figures[True], 2)})  # fmt: skip
    report = {"threads": args.threads, "rows": rows}
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
