"""Benchmark: what one decode step costs at each context length, builds side by side, rounds interleaved.

    python -m inference.bench.context_cost --model-dir DIR [--model-dir DIR ...] [--contexts 100,1000,4000]
                                           [--steps 32] [--rounds 3] [--threads 1]

For every round, context and build in turn: one row gets ``context`` random ids (in 512-token
chunks), then ``--steps`` greedy steps of the bare engine are timed. Prints JSON: per build and
context, milliseconds per step in wall time and in process CPU time (min/median/max over rounds),
and the load average. With one thread (the default) ONNX Runtime computes on the calling thread and
spins nowhere, so the CPU time is the step's own work, which a shared machine disturbs far less
than the wall time. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from inference.bench.decode import random_ids
from inference.engine import CPU, Decoder
from inference.runtime import load_runtime

CHUNK = 512


def step_costs(decoder: Decoder, context: int, steps: int) -> tuple[float, float]:
    """Milliseconds per decode step after ``context`` positions: (wall, process CPU)."""
    state = decoder.new_state()
    ids = random_ids(context)
    for begin in range(0, context, CHUNK):
        logits = state.append_tokens(ids[begin : begin + CHUNK])
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        logits = state.append_tokens(np.argmax(logits, axis=-1)[:, None])
    return 1e3 * (time.perf_counter() - wall) / steps, 1e3 * (time.process_time() - cpu) / steps


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, action="append", required=True)
    parser.add_argument("--contexts", default="100,1000,4000")
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    contexts = [int(c) for c in args.contexts.split(",") if c]
    decoders = {str(d): load_runtime(d, (CPU,), args.threads).decoder for d in args.model_dir}
    load_before = os.getloadavg()
    for decoder in decoders.values():  # warm-up: first runs allocate and pre-pack
        step_costs(decoder, 16, 4)
    samples: dict[str, dict[int, list[tuple[float, float]]]] = {name: {c: [] for c in contexts} for name in decoders}
    for _ in range(args.rounds):
        for context in contexts:
            for name, decoder in decoders.items():
                samples[name][context].append(step_costs(decoder, context, args.steps))

    def spread(values: list[float]) -> dict[str, float]:
        return {"min": round(min(values), 2), "median": round(statistics.median(values), 2), "max": round(max(values), 2)}

    return {
        "threads": args.threads,
        "steps": args.steps,
        "rounds": args.rounds,
        "ms_per_step": {
            name: {
                str(context): {"wall": spread([w for w, _ in runs]), "cpu": spread([c for _, c in runs])}
                for context, runs in by_context.items()
            }
            for name, by_context in samples.items()
        },
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
    }


if __name__ == "__main__":
    json.dump(main(), sys.stdout, indent=2)
    print()
