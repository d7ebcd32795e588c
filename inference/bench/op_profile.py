"""Benchmark: where a decode step's time goes, by operator type, at each batch size.

    python -m inference.bench.op_profile --model-dir DIR [--batches 1,8] [--context 100]
                                         [--steps 20] [--threads 2]

For each batch size, a session of the build with ONNX Runtime's profiler on: every row gets
``--context`` random ids in one prefill, then ``--steps`` greedy decode steps run on the shared
cache. Prints JSON: per batch, the mean ``model_run`` of the decode steps and the mean time of each
operator type in them (milliseconds and share of the step), largest first, and the load average.
The profiler adds a little to every node; the shares are what to read. It answers where the
batch's step goes: what grows with the rows (attention, over every row's own cache) and what
does not (the weights' products, read once for all rows). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from inference.bench.decode import random_ids
from inference.engine import CPU
from inference.runtime import load_runtime


def profile_steps(model_dir: Path, batch: int, context: int, steps: int, threads: int, folder: Path) -> dict[str, Any]:
    """One profiled session: ``batch`` rows of ``context`` ids, then ``steps`` decode steps."""
    plain = ort.SessionOptions

    def profiled() -> ort.SessionOptions:
        options = plain()
        options.enable_profiling = True
        options.profile_file_prefix = str(folder / f"batch{batch}")
        return options

    ort.SessionOptions = profiled  # the engine makes its own options; these are the same, profiled
    try:
        decoder = load_runtime(model_dir, (CPU,), threads).decoder
    finally:
        ort.SessionOptions = plain
    past = decoder.empty_past(batch, context + steps)
    ids = np.array([random_ids(context, seed=row) for row in range(batch)], dtype=np.int64)  # [B, context]
    logits, past = decoder.run(ids, past, 0)
    for step in range(steps):
        logits, past = decoder.run(np.argmax(logits, axis=-1)[:, None].astype(np.int64), past, context + step)
    events = json.loads(Path(decoder.session.end_profiling()).read_text())
    runs = [e for e in events if e.get("name") == "model_run"]
    decode_from = runs[0]["ts"] + runs[0]["dur"]  # the prefill's run ends here
    by_op: Counter[str] = Counter()
    for event in events:
        if event.get("cat") == "Node" and event["ts"] >= decode_from and event["name"].endswith("_kernel_time"):
            by_op[event["args"]["op_name"]] += event["dur"]
    step_us = sum(r["dur"] for r in runs[1:]) / len(runs[1:])
    return {
        "step_ms": round(step_us / 1e3, 3),
        "ops": {
            op: {"ms": round(us / steps / 1e3, 3), "share": round(us / steps / step_us, 3)} for op, us in by_op.most_common()
        },
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--context", type=int, default=100)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        batches = {
            str(b): profile_steps(args.model_dir, b, args.context, args.steps, args.threads, Path(folder))
            for b in (int(x) for x in args.batches.split(","))
        }
    return {
        "model_dir": str(args.model_dir),
        "context": args.context,
        "threads": args.threads,
        "batches": batches,
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
    }


if __name__ == "__main__":
    json.dump(main(sys.argv[1:]), sys.stdout, indent=1)
    print()
