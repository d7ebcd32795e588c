"""Speculative decoding against plain decoding, on three kinds of prompt, in the same run.

    python -m inference.bench --speculative 2,4,8 [--tokens 128] [--rounds 3] [--threads 2]
                              [--temperature 0]

Each round runs every prompt kind plainly and then with prompt-lookup drafts at each k, in turn
(the rounds interleave, so the machine's load falls on all alike). Every run is a websocket run's
work: the full sampler chain (``--temperature``, seeded), top-20 alternatives traced, text
streamed, ``--tokens`` new tokens (end-of-sequence ignored). Figures per kind and k, as
min/median/max over rounds: decode tokens/s (the run's own ``decode_tokens_per_s``), its ratio to
the plain run of the same round, the acceptance rate (accepted / drafted) and the tokens each
decoder pass made. At temperature 0 the report also says whether every speculative run gave the
plain run's tokens (it must). The machine is shared: the load average is reported before and after.
"""

from __future__ import annotations

import os
import statistics
from typing import Any

from inference.bench.concurrency import TOP_N
from inference.decoding.generation import Finished, GenerationRequest, TokenStep, Verification, run
from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.runtime import Runtime
from inference.sampling import SamplingParams

PROMPTS: dict[str, str] = {
    "code": (
        "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n"
        "        self.items.append(item)\n\n    def pop(self):\n        return self.items.pop()\n\n\n"
        "class Queue:\n    def __init__(self):\n"
    ),
    "summary": (
        "The Great Barrier Reef is the world's largest coral reef system, made of over 2,900 individual reefs "
        "and 900 islands stretching for over 2,300 kilometres off the coast of Queensland, Australia. The reef "
        "is home to a huge diversity of life, and it is threatened by rising sea temperatures, which cause "
        "coral bleaching, and by pollution and overfishing.\n\nSummarise the text above in three sentences.\n\n"
        "Summary:"
    ),
    "story": "Write a short story about a lighthouse keeper who finds a message in a bottle.\n\nStory:",
}


def one_run(runtime: Runtime, prompt: str, tokens: int, temperature: float, k: int | None) -> dict[str, Any]:
    request = GenerationRequest(
        prompt,
        sampling=SamplingParams(temperature=temperature, seed=0),
        loop=LoopParams(max_tokens=tokens, ignore_eos=True),
        top_n=TOP_N,
        speculative=None if k is None else SpeculativeParams("prompt_lookup", k),
    )
    token_ids: list[int] = []
    passes = 0
    finished: Finished | None = None
    for item in run(runtime, request):
        if isinstance(item, TokenStep):
            token_ids.append(item.token_id)
            passes += 1
        elif isinstance(item, Verification):
            passes -= len(item.checks)  # the verification's tokens came from one pass
        elif isinstance(item, Finished):
            finished = item
    assert finished is not None
    totals = finished.speculative
    return {
        "tokens_per_s": float(finished.decode_tokens_per_s or 0.0),
        "acceptance": None if totals is None or not totals.drafted else totals.accepted / totals.drafted,
        "tokens_per_pass": len(token_ids) / max(passes, 1),
        "token_ids": token_ids,
    }


def measure(runtime: Runtime, ks: list[int], tokens: int, rounds: int, temperature: float) -> dict[str, Any]:
    load_before = os.getloadavg()
    one_run(runtime, PROMPTS["code"], 8, temperature, None)  # warm-up
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {kind: {} for kind in PROMPTS}
    for _ in range(rounds):
        for kind, prompt in PROMPTS.items():
            for k in [None, *ks]:
                runs[kind].setdefault("plain" if k is None else f"k={k}", []).append(
                    one_run(runtime, prompt, tokens, temperature, k)
                )
    figures: dict[str, dict[str, Any]] = {}
    for kind, by_setting in runs.items():
        plain = by_setting["plain"]
        figures[kind] = {"plain": {"tokens_per_s": spread([r["tokens_per_s"] for r in plain])}}
        for setting, results in by_setting.items():
            if setting == "plain":
                continue
            figures[kind][setting] = {
                "tokens_per_s": spread([r["tokens_per_s"] for r in results]),
                "speedup": spread([r["tokens_per_s"] / p["tokens_per_s"] for r, p in zip(results, plain)], 2),
                "acceptance": spread([r["acceptance"] or 0.0 for r in results], 2),
                "tokens_per_pass": spread([r["tokens_per_pass"] for r in results], 2),
            }
            if temperature == 0.0:
                figures[kind][setting]["same_tokens_as_plain"] = all(
                    r["token_ids"] == p["token_ids"] for r, p in zip(results, plain)
                )
    return {
        "speculative": {
            "draft": "prompt_lookup",
            "ks": ks,
            "new_tokens": tokens,
            "rounds": rounds,
            "temperature": temperature,
            "figures": figures,
            "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        }
    }


def spread(values: list[float], digits: int = 1) -> dict[str, float]:
    return {
        "min": round(min(values), digits),
        "median": round(statistics.median(values), digits),
        "max": round(max(values), digits),
    }
