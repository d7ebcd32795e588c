"""Benchmark: our decoder against the peers installed here, measured in the same run, rounds interleaved.

    python -m inference.bench [--tokens 128] [--rounds 3] [--threads 2] [--contexts 100,1000,4000]
                              [--batches 1,4,8] [--prompt-tokens 512] [--no-peers] [--genai-model DIR]
                              [--model-dir DIR] [--bare-model-dir DIR]
    python -m inference.bench --concurrency 1,2,4,8,16 [--tokens 48] [--requests-per-stream 2] [--max-batch 8]
                              [--rounds 3] [--spinning on|off]

    python -m inference.bench --speculative 2,4,8 [--drafts prompt_lookup,fast] [--keep-drafting fast]
                              [--tokens 128] [--rounds 3] [--temperature 0]

With ``--concurrency``, only the continuous-batching figures are taken: concurrent streams through
the worker's scheduler (``inference.bench.concurrency`` says how). With ``--speculative``, only
speculative decoding against plain decoding on three prompt kinds (``inference.bench.decode.speculative``).

Prints JSON. Systems (each with ``--threads`` threads):

- ``ours``: the generation loop as a websocket run drives it: the full sampler chain (default
  parameters, temperature 1), top-20 alternatives traced per token, text streamed;
- ``ours_greedy_engine``: the bare engine (``DecodeState``, argmax), for the context and batch figures;
- ``bare <dir>`` (``--bare-model-dir``, repeatable): a build's graph alone, greedy through plain
  ``session.run`` calls (``inference.bench.bare``): any build, also one the engine cannot load
  (Gemma's unfused recipe 5);
- ``llama.cpp``: ``llama-cpp-python`` on the very GGUF the first ``--model-dir`` is built from
  (SmolLM2's or Gemma's; the ``peers`` extra; it compiles for ~10 minutes, so it is optional);
- ``genai``: ``onnxruntime-genai`` on the int4 model its own builder makes from SmolLM2's
  dequantized checkpoint (``--genai-model``, default ``.models/peers/genai-int4``, built by
  ``python -m inference.bench.peers``; skipped for another model). A peer that is not installed or
  has no model is reported as skipped.

Figures: decode tokens/s after "The capital of France is" (``--tokens`` new tokens); decode
tokens/s at each context length of ``--contexts`` (a random-id prompt of that length, then 32
steps; SmolLM2's context window is 8192); our aggregate tokens/s at each batch size; prefill
time of ``--prompt-tokens`` tokens; resident memory after loading each system and the process's
peak; the load average before and after. Every figure is taken once per round, the systems in
turn within a round, and reported as min/median/max over rounds; ``ratios`` divide ours by each
peer round by round, and each further ``--model-dir`` build (a variant) by the first; a further
build is named ``ours (<variant>; <kernels>)``, the kernels as the runtime reports them (``our kernels
(avx512vnni)`` or ``ONNX Runtime MatMulNBits``: a build made with the kernel library hidden, e.g.
``PLAYGROUND_KERNELS_LIBRARY=/nowhere python -m inference.modelbuild --model-dir DIR``, is the latter).
``decode_tokens_per_cpu_s``: the same runs' tokens per second of the process's CPU time (the prompt
included): with ``--threads 1`` a speed that other work on a shared machine hardly moves (no thread
waits for another), the figure to compare systems by when the machine is not quiet; with more
threads, spinning threads inflate it. ``loop_ms_per_token_excluding_the_model_call`` (and its ``cpu`` twin, the thread's CPU time, which
a shared machine inflates less): what the generation loop costs per token besides ONNX Runtime's
run itself (``inference.bench.loop_cost``). The machine
is shared: only same-run ratios carry over between runs.
Speed targets are read from these numbers, never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from inference.batching.params import DEFAULT_MAX_BATCH, DEFAULT_SPINNING
from inference.bench import concurrency as bench_concurrency
from inference.bench import loop_cost
from inference.bench import peers as peer_models
from inference.bench import speculative as bench_speculative
from inference.bench.bare import BareSession
from inference.bench.concurrency import TOP_N, peak_rss_mb, rss_mb
from inference.decoding.generation import Finished, GenerationRequest, run
from inference.decoding.loop_params import LoopParams
from inference.engine import CPU
from inference.model_dir import default_model_dir, read_manifest
from inference.modelbuild.source import source_for
from inference.models import DEFAULT_MODEL, SMOLLM2, ModelEntry, PackagedGguf, entry_for, entry_named
from inference.runtime import Runtime, load_runtime
from inference.sampling import SamplingParams
from inference.sampling import bench as sampling_bench

PROMPT = "The capital of France is"
CONTEXT_STEPS = 32  # decode steps measured at each context length
DEFAULT_GENAI_MODEL = peer_models.DEFAULT_OUT


def random_ids(length: int, seed: int = 0) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(1000, 30000, length)]


class Ours:
    def __init__(self, runtime: Runtime, name: str = "ours") -> None:
        self.runtime = runtime
        self.name = name

    def decode(self, tokens: int) -> float:
        """Tokens/s of the generation loop (full chain at its defaults, top-20 alternatives, text)."""
        request = GenerationRequest(
            PROMPT, sampling=SamplingParams(seed=0), loop=LoopParams(max_tokens=tokens, ignore_eos=True), top_n=TOP_N
        )
        finished = [item for item in run(self.runtime, request) if isinstance(item, Finished)][0]
        return float(finished.decode_tokens_per_s or 0.0)

    def decode_at(self, context: int, batch: int = 1) -> float:
        """Aggregate tokens/s of the bare engine: ``batch`` rows after ``context`` prompt tokens."""
        state = self.runtime.decoder.new_state(batch_size=batch)
        logits = state.append_tokens(random_ids(context))
        began = time.perf_counter()
        for _ in range(CONTEXT_STEPS):
            logits = state.append_tokens(np.argmax(logits, axis=-1)[:, None])
        return batch * CONTEXT_STEPS / (time.perf_counter() - began)

    def prefill(self, length: int) -> float:
        state = self.runtime.decoder.new_state()
        began = time.perf_counter()
        state.append_tokens(random_ids(length))
        return time.perf_counter() - began


class LlamaCpp:
    name = "llama.cpp"

    def __init__(self, threads: int, context: int, gguf: Path | None = None) -> None:
        self.model = peer_models.LlamaCppModel(threads, context, gguf)
        self.llm = self.model.llm
        self.prompt = self.llm.tokenize(PROMPT.encode(), add_bos=False)

    def decode(self, tokens: int) -> float:
        return self.model.greedy_tokens_per_s(self.prompt, tokens)

    def decode_at(self, context: int, batch: int = 1) -> float:
        return self.model.greedy_tokens_per_s(random_ids(context), CONTEXT_STEPS)

    def prefill(self, length: int) -> float:
        self.llm.reset()
        began = time.perf_counter()
        self.llm.eval(random_ids(length))
        return time.perf_counter() - began


class Genai:
    name = "genai"

    def __init__(self, model_dir: Path, context: int) -> None:
        import onnxruntime_genai as og  # optional, the peers extra

        self.og = og
        self.model = og.Model(str(model_dir))
        self.tokenizer = og.Tokenizer(self.model)
        self.prompt = list(self.tokenizer.encode(PROMPT))
        self.context = context

    def _generator(self, batch: int = 1):
        params = self.og.GeneratorParams(self.model)
        params.set_search_options(max_length=self.context, batch_size=batch, do_sample=False)
        return self.og.Generator(self.model, params)

    def _greedy(self, prompt: list[int], tokens: int) -> float:
        generator = self._generator()
        generator.append_tokens(np.array([prompt], dtype=np.int32))
        began = time.perf_counter()
        for _ in range(tokens):
            generator.generate_next_token()
        return tokens / (time.perf_counter() - began)

    def decode(self, tokens: int) -> float:
        return self._greedy(self.prompt, tokens)

    def decode_at(self, context: int, batch: int = 1) -> float:
        return self._greedy(random_ids(context), CONTEXT_STEPS)

    def prefill(self, length: int) -> float:
        generator = self._generator()
        began = time.perf_counter()
        generator.append_tokens(np.array([random_ids(length)], dtype=np.int32))
        return time.perf_counter() - began


def packaged_entry_of(model_dir: Path) -> ModelEntry:
    """The registry entry of the build in ``model_dir`` (its manifest's model), where it is built from a
    packaged GGUF; the default model's otherwise (a tiny model's recipe is SmolLM2's)."""
    entry = entry_named(read_manifest(model_dir)["model_name"])
    return entry if entry is not None and isinstance(entry.source, PackagedGguf) else entry_for(DEFAULT_MODEL)


def gguf_of(model_dir: Path) -> Path:
    """The packaged GGUF the build in ``model_dir`` was made from (its manifest's model)."""
    return source_for(packaged_entry_of(model_dir)).path


def load_peers(threads: int, context: int, genai_model: Path, model_dir: Path) -> tuple[list[Any], dict[str, str]]:
    """The peers that are installed and have a model here, for the model built in ``model_dir``;
    why the others were skipped."""
    peers: list[Any] = []
    skipped: dict[str, str] = {}
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    try:
        peers.append(LlamaCpp(threads, context, gguf_of(model_dir)))
    except ImportError:
        skipped["llama.cpp"] = "llama-cpp-python not installed (pip install '.[peers]')"
    if packaged_entry_of(model_dir) is not SMOLLM2:
        skipped["genai"] = "its model is built from SmolLM2's checkpoint"
    elif not (genai_model / "genai_config.json").is_file():
        skipped["genai"] = f"no genai model in {genai_model} (build it: python -m inference.bench.peers)"
    else:
        try:
            peers.append(Genai(genai_model, context))
        except ImportError:
            skipped["genai"] = "onnxruntime-genai not installed (pip install '.[peers]')"
    return peers, skipped


def spread(values: list[float], digits: int = 1) -> dict[str, float]:
    return {
        "min": round(min(values), digits),
        "median": round(statistics.median(values), digits),
        "max": round(max(values), digits),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=None, help="new tokens per run (default 128; with --concurrency, 48)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--contexts", default="100,1000,4000", help="context lengths for the decode-at-context figure")
    parser.add_argument("--batches", default="1,4,8", help="batch sizes for our aggregate decode figure")
    parser.add_argument("--prompt-tokens", type=int, default=512, help="length of the prompt for the prefill figure")
    parser.add_argument("--no-peers", action="store_true", help="measure our engine only")
    parser.add_argument(
        "--model-dir",
        type=Path,
        action="append",
        default=None,
        help="our model (default: the configured one); repeat to measure several builds (e.g. a --variant fast one) "
        "in the same run",
    )
    parser.add_argument(
        "--bare-model-dir",
        type=Path,
        action="append",
        default=[],
        help="a build to measure through plain session.run calls, greedy (repeatable; any build, e.g. an unfused one)",
    )
    parser.add_argument("--genai-model", type=Path, default=DEFAULT_GENAI_MODEL)
    parser.add_argument("--concurrency", default="", help="e.g. 1,2,4,8,16: concurrent streams through the batching scheduler")
    parser.add_argument("--requests-per-stream", type=int, default=2, help="with --concurrency: requests each stream sends")
    parser.add_argument("--max-batch", type=int, default=DEFAULT_MAX_BATCH, help="with --concurrency: the scheduler's rows")
    parser.add_argument(
        "--spinning",
        choices=("on", "off"),
        default="on" if DEFAULT_SPINNING else "off",
        help="with --concurrency: whether ONNX Runtime's threads spin between calls (default: as a worker serves)",
    )
    parser.add_argument("--speculative", default="", help="e.g. 2,4,8: speculation at each k (per --drafts) against plain runs")
    parser.add_argument("--temperature", type=float, default=0.0, help="with --speculative: the runs' temperature")
    parser.add_argument("--drafts", default="prompt_lookup", help="with --speculative: draft sources, e.g. prompt_lookup,fast")
    parser.add_argument(
        "--keep-drafting", default="", help="with --speculative: sources also run with switch_off false, e.g. fast"
    )
    args = parser.parse_args(argv)
    if args.speculative:
        runtime = load_runtime((args.model_dir or [default_model_dir()])[0], (CPU,), args.threads)
        ks = [int(k) for k in args.speculative.split(",") if k]
        names = tuple(name for name in args.drafts.split(",") if name)
        drafts = bench_speculative.served_drafts(runtime, args.threads)
        peer = None if args.no_peers else bench_speculative.llama_cpp_decode(args.threads)
        kept = tuple(name for name in args.keep_drafting.split(",") if name)
        return bench_speculative.measure(
            runtime, ks, args.tokens or 128, args.rounds, args.temperature, names, drafts, peer, kept
        )
    if args.concurrency:
        model_dir = (args.model_dir or [default_model_dir()])[0]
        runtime = load_runtime(model_dir, (CPU,), args.threads, spinning=args.spinning == "on")
        levels = [int(c) for c in args.concurrency.split(",") if c]
        return bench_concurrency.measure(
            runtime, levels, args.tokens or 48, args.requests_per_stream, args.max_batch, args.rounds
        )
    args.tokens = args.tokens or 128
    contexts = [int(c) for c in args.contexts.split(",") if c]
    batches = [int(b) for b in args.batches.split(",") if b]

    load_before = os.getloadavg()
    memory: dict[str, float] = {"start": round(rss_mb())}
    ours_systems = []
    for model_dir in args.model_dir or [default_model_dir()]:
        variant = read_manifest(model_dir).get("variant")
        runtime = load_runtime(model_dir, (CPU,), args.threads)
        # a further build is named by its variant and kernels (two exact builds may differ only in those)
        name = "ours" if not ours_systems else f"ours ({variant}; {runtime.info.kernels})"
        ours_systems.append(Ours(runtime, name))
        memory[f"after {name}"] = round(rss_mb())
    bare = [BareSession(d, args.threads, PROMPT, CONTEXT_STEPS, random_ids) for d in args.bare_model_dir]
    for system in bare:
        memory[f"after {system.name}"] = round(rss_mb())
    ours = ours_systems[0]
    runtime = ours.runtime
    window = runtime.shape.context_window
    contexts = [c for c in contexts if c + CONTEXT_STEPS <= window]
    first_dir = (args.model_dir or [default_model_dir()])[0]
    peers, skipped = (
        ([], {"all": "--no-peers"})
        if args.no_peers
        else load_peers(args.threads, max(contexts + [args.prompt_tokens]) + CONTEXT_STEPS + 8, args.genai_model, first_dir)
    )
    for peer in peers:
        memory[f"after {peer.name}"] = round(rss_mb())
    systems = [*ours_systems, *bare, *peers]

    figures: dict[str, dict[str, list[float]]] = {}

    def measure(label: str, system: Any, call: Callable[[], float]) -> None:
        figures.setdefault(label, {}).setdefault(system.name, []).append(call())

    for system in systems:  # warm-up: first runs allocate and pre-pack
        system.decode(8)
    for _ in range(args.rounds):
        for system in systems:
            cpu_began = time.process_time()
            measure("decode_tokens_per_s", system, lambda: system.decode(args.tokens))
            cpu_s = time.process_time() - cpu_began
            measure("decode_tokens_per_cpu_s", system, lambda: args.tokens / cpu_s)
        for system in ours_systems:
            cost = loop_cost.loop_ms_per_token(system.runtime, args.tokens)
            measure("loop_ms_per_token_excluding_the_model_call", system, lambda: cost["wall"])
            measure("loop_cpu_ms_per_token_excluding_the_model_call", system, lambda: cost["cpu"])
        for context in contexts:
            for system in systems:
                measure(f"decode_tokens_per_s_at_{context}_context", system, lambda: system.decode_at(context))
        for batch in batches:
            for system in ours_systems:
                measure(f"aggregate_tokens_per_s_batch_{batch}", system, lambda: system.decode_at(100, batch))
        for system in systems:
            measure(f"prefill_{args.prompt_tokens}_tokens_s", system, lambda: system.prefill(args.prompt_tokens))

    report: dict[str, Any] = {
        "models": {
            o.name: {**o.runtime.info.to_dict(), "variant": read_manifest(d).get("variant")}
            for o, d in zip(ours_systems, args.model_dir or [default_model_dir()])
        },
        "context_window": window,
        "threads": args.threads,
        "rounds": args.rounds,
        "new_tokens": args.tokens,
        "ours_is": f"the generation loop: sampler chain at its defaults, top-{TOP_N} alternatives, text; "
        "context/batch figures: the bare engine, greedy; 'bare <dir>': the graph through session.run, greedy",
        "peers_skipped": skipped,
        "figures": {
            label: {name: spread(v, 3 if "prefill" in label or "loop" in label else 1) for name, v in by.items()}
            for label, by in figures.items()
        },
        "ratios_ours_to_peer": {},
        "memory_mb": {**memory, "peak": round(peak_rss_mb())},
        "sampler_chain_ms_per_token": sampling_bench.figures(vocab_size=runtime.shape.vocab_size),
        "sampler_chain_vocab_size": runtime.shape.vocab_size,
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
    }
    # each of our builds against each peer, and every further build (a variant) against the first
    pairs = [(mine, peer) for mine in [*ours_systems, *bare] for peer in peers] + [
        (mine, ours) for mine in [*ours_systems[1:], *bare]
    ]
    for label, by in figures.items():
        if label.startswith("loop"):
            continue  # a cost of our loop alone: no peer has one
        for mine, peer in pairs:
            if peer.name in by and mine.name in by:
                ours_v, peer_v = by[mine.name], by[peer.name]
                # prefill is a time: ours ahead means a ratio > 1 as for speeds
                ratio = [p / o for o, p in zip(ours_v, peer_v)] if "prefill" in label else [o / p for o, p in zip(ours_v, peer_v)]
                report["ratios_ours_to_peer"].setdefault(label, {})[f"{mine.name} / {peer.name}"] = spread(ratio, 2)
    return report


def cli() -> None:
    """``python -m inference.bench``: the report as JSON on standard output."""
    json.dump(main(), sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    cli()
