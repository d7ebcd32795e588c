"""Benchmark: prints JSON figures for the real model on this machine.

    python -m inference.bench [--tokens 128] [--prompt-tokens 512] [--threads 2]

Figures: time to first token and decode tokens/s of our generation loop (sampler chain, top-N
alternatives and streaming text included), the same for a plain ONNX Runtime loop that copies the
KV cache through numpy every step (the peer, measured in the same run, so the
ratio is fair), prefill time of a long prompt, peak RSS, and the sampler chain's cost per token.
Speed targets are read from these numbers, never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from typing import Any

import numpy as np

from inference.engine import CPU
from inference.generation import Finished, GenerationRequest, TokenStep, run
from inference.model_dir import default_model_dir
from inference.runtime import Runtime, load_runtime
from inference.sampling import SamplingParams
from inference.sampling import bench as sampling_bench
from inference.loop_params import LoopParams

PROMPT = "The capital of France is"


def ours(runtime: Runtime, prompt: str, tokens: int, sampling: SamplingParams) -> dict[str, float]:
    request = GenerationRequest(prompt, sampling=sampling, loop=LoopParams(max_tokens=tokens, ignore_eos=True))
    steps: list[float] = []
    finished: Finished | None = None
    for item in run(runtime, request):
        if isinstance(item, TokenStep):
            steps.append(item.elapsed_ms)
        elif isinstance(item, Finished):
            finished = item
    assert finished is not None
    return {
        "time_to_first_token_ms": round(finished.time_to_first_token_ms or 0.0, 2),
        "decode_tokens_per_s": round(finished.decode_tokens_per_s or 0.0, 2),
        "median_step_ms": round(statistics.median(steps[1:]), 2),
    }


def plain_loop(runtime: Runtime, prompt_ids: list[int], tokens: int) -> dict[str, float]:
    """The peer: session.run with numpy inputs, every present.* copied back as past_key_values.*."""
    session = runtime.decoder.session
    shape = runtime.shape
    past = {
        f"past_key_values.{i}.{kind}": np.zeros((1, shape.kv_heads, 0, shape.head_dim), np.float32)
        for i in range(shape.num_layers)
        for kind in ("key", "value")
    }
    output_names = [o.name for o in session.get_outputs()]
    ids = list(prompt_ids)
    feed_ids = ids
    started = time.perf_counter()
    first = last = started
    for step in range(tokens):
        length = len(ids)
        new = len(feed_ids)
        outputs = session.run(output_names, {
            "input_ids": np.array([feed_ids], np.int64),
            "attention_mask": np.ones((1, length), np.int64),
            "position_ids": np.arange(length - new, length, dtype=np.int64)[None, :],
            **past,
        })
        logits = outputs[0][0, -1]
        past = {name.replace("present", "past_key_values"): value for name, value in zip(output_names[1:], outputs[1:])}
        token = int(np.argmax(logits))
        ids.append(token)
        feed_ids = [token]
        now = time.perf_counter()
        if step == 0:
            first = now
        last = now
    return {
        "time_to_first_token_ms": round((first - started) * 1000, 2),
        "decode_tokens_per_s": round((tokens - 1) / (last - first), 2),
    }


def prefill_ms(runtime: Runtime, length: int) -> float:
    ids = np.arange(1000, 1000 + length, dtype=np.int64)
    state = runtime.decoder.new_state()
    began = time.perf_counter()
    state.append_tokens(ids)
    return round((time.perf_counter() - began) * 1000, 1)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--prompt-tokens", type=int, default=512, help="length of the long prompt for the prefill figure")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each loop; the best is reported")
    args = parser.parse_args(argv)

    runtime = load_runtime(default_model_dir(), (CPU,), args.threads)
    prompt_ids = runtime.codec.encode(PROMPT, "completion")
    greedy = SamplingParams(temperature=0.0, seed=0)
    sampled = SamplingParams(temperature=0.8, top_p=0.95, seed=0)
    ours(runtime, PROMPT, 8, greedy)  # warm-up

    def best(results: list[dict[str, float]]) -> dict[str, float]:
        return max(results, key=lambda r: r["decode_tokens_per_s"])

    ours_greedy = best([ours(runtime, PROMPT, args.tokens, greedy) for _ in range(args.repeats)])
    ours_sampled = best([ours(runtime, PROMPT, args.tokens, sampled) for _ in range(args.repeats)])
    peer = best([plain_loop(runtime, prompt_ids, args.tokens) for _ in range(args.repeats)])
    report: dict[str, Any] = {
        "model": runtime.info.to_dict(),
        "threads": args.threads,
        "prompt_tokens": len(prompt_ids),
        "new_tokens": args.tokens,
        "ours_greedy": ours_greedy,
        "ours_temperature_0.8_top_p_0.95": ours_sampled,
        "peer_plain_numpy_loop_greedy": peer,
        "decode_ratio_ours_greedy_to_peer": round(ours_greedy["decode_tokens_per_s"] / peer["decode_tokens_per_s"], 3),
        f"prefill_{args.prompt_tokens}_tokens_ms": min(prefill_ms(runtime, args.prompt_tokens) for _ in range(2)),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    report["sampler_chain_ms_per_token"] = sampling_bench.figures()
    return report


if __name__ == "__main__":
    json.dump(main(), sys.stdout, indent=2)
    print()
