"""What a saved run's stored token rows cost to read and export, per row.

    python -m playground.runs.row_bench [--rows 3000] [--alternatives 20] [--rounds 5]

A run's page and its export read every stored row (``token_rows.from_stored``: the row as its
``TokenEvent``, every field checked) and write it out (``token_rows.exported``); a live token is
written the same way for the websocket (``TokenEvent.to_json``). Prints JSON:
the median over ``--rounds`` of microseconds per token for each, on the thread's CPU clock, for a
row of a sampled token with ``--alternatives`` alternatives, five stage counts, a draw interval and
a watched token.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from playground.runs.token_rows import exported, from_stored


def sample_row(alternatives: int) -> list[Any]:
    """A stored row as the recorder writes one for a sampled token."""
    return [
        0, 5, 123, " the", " the", 0.31, 0.42, 0.123, 3.2, 2.1, 12.5,
        [[100 + i, f" tok{i}", 0.4 / (i + 1), 0.5 / (i + 1) if i < 15 else 0.0, None if i < 15 else "top_k"] for i in range(alternatives)],
        [["repetition_penalty", 49152], ["temperature", 49152], ["top_k", 40], ["top_p", 12], ["min_p", 9]],
        {
            "draw_interval": [0.1, 0.2],
            "watched": [{"id": 5, "token": "x", "raw_prob": 0.1, "prob": 0.0, "raw_rank": 30, "rank": None, "removed_by": "top_k"}],
        },
    ]  # fmt: skip


def microseconds_per_call(call: Callable[[], Any], calls: int) -> float:
    began = time.thread_time()
    for _ in range(calls):
        call()
    return (time.thread_time() - began) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=3000, help="rows read (and exported) per round")
    parser.add_argument("--alternatives", type=int, default=20, help="alternatives in the row")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    row = sample_row(args.alternatives)
    token = from_stored(row)
    read = [microseconds_per_call(lambda: from_stored(row), args.rows) for _ in range(args.rounds)]
    written = [microseconds_per_call(lambda: exported(token), args.rows) for _ in range(args.rounds)]
    live = [microseconds_per_call(token.to_json, args.rows) for _ in range(args.rounds)]
    print(
        json.dumps(
            {
                "unit": "microseconds per token, thread CPU time, median over rounds",
                "alternatives": args.alternatives,
                "from_stored": round(statistics.median(read), 1),
                "exported": round(statistics.median(written), 1),
                "to_json": round(statistics.median(live), 1),
                "from_stored_range": [round(min(read), 1), round(max(read), 1)],
            }
        )
    )


if __name__ == "__main__":
    main()
