"""Benchmark: the memory one row's key/value cache takes at a context length, in a process of its own.

    python -m inference.bench.cache_memory [--model-dir DIR] [--context 4080] [--chunk 256] [--steps 16]

Loads the model, feeds one row ``--context`` random ids in prompt chunks of ``--chunk`` (so that no
step's activations outgrow the cache) and ``--steps`` single tokens, and prints JSON: the cache's
buffers (bytes and capacities: the global layers' and, for a model with sliding-window layers, theirs)
and the process's resident memory after loading and after the row, in MB. Run it once per model and
compare the processes' resident memory after the row: within one process the row partly reuses
heap that loading freed (the runtime keeps freed memory), and zeroed buffers are resident only where
written. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from inference.bench.concurrency import rss_mb
from inference.bench.decode import random_ids
from inference.engine import CPU
from inference.model_dir import default_model_dir, read_manifest
from inference.runtime import load_runtime


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=default_model_dir())
    parser.add_argument("--context", type=int, default=4080)
    parser.add_argument("--chunk", type=int, default=256)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    runtime = load_runtime(args.model_dir, (CPU,), args.threads)
    loaded = rss_mb()
    state = runtime.decoder.new_state()
    ids = random_ids(args.context)
    for begin in range(0, args.context, args.chunk):
        logits = state.append_tokens(ids[begin : begin + args.chunk])
    for _ in range(args.steps):
        logits = state.append_tokens(np.argmax(logits, axis=-1)[:, None])
    cache = state.past
    return {
        "model_dir": str(args.model_dir),
        "recipe_version": read_manifest(args.model_dir).get("recipe_version"),
        "positions": state.length,
        "cache_mb": round(cache.nbytes / 1e6, 1),
        "global_capacity": cache.capacity,
        "sliding_capacity": cache.sliding_capacity,
        "rss_mb_after_loading": round(loaded),
        "rss_mb_after_the_row": round(rss_mb()),
        "rss_mb_of_the_row": round(rss_mb() - loaded),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


if __name__ == "__main__":
    json.dump(main(), sys.stdout, indent=2)
    print()
