"""The chain's cost per token on a real-sized vocabulary.

``python -m inference.sampling.bench`` prints JSON: median milliseconds per ``chain.step`` (with the
trace and its top-20 alternatives, as a run shows them) at SmolLM2's vocabulary (49,152) and Gemma
3's (262,144), for the default parameters, for every stage on (in the default order and with
temperature last), and for a few single stages that work on the whole vocabulary, with the page
faults per step, and the
grammar stage's cost per token on the served model's vocabulary (``grammar_bench``: mask and whole
stage, median and p95, per constraint). Every case is timed in ``--rounds`` interleaved rounds (the
machine's speed drifts from minute to minute): the median over rounds, its range, and the load
average. It raises glibc's malloc thresholds as a worker does (``inference/allocator.py``);
``--malloc-defaults`` measures without that.

The made-up logits are harsher than a model's: at 262,144 their broad bulk holds 34 % of the mass
past the head (the tokens within 2^-6 of the top), where the pick searches further. ``--model-dir DIR`` (repeatable) also times the chain on that built model's own
logits at every position of a fixed English text (one prefill), and every report says which share
of the mass lay past the head.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from inference.allocator import keep_freed_memory
from inference.runtime import load_runtime
from inference.sampling import grammar_bench
from inference.sampling.candidates import Softmax
from inference.sampling.chain import SamplerChain
from inference.sampling.params import DEFAULT_ORDER, SamplingParams

VOCAB_SIZE = 49152  # SmolLM2's vocabulary
VOCAB_SIZES = (VOCAB_SIZE, 262_144)  # and Gemma 3's
TOP_N = 20  # the alternatives traced per token


def fake_logits(rng: np.random.Generator, vocab_size: int) -> np.ndarray:
    """float32 logits shaped like a language model's: a broad normal bulk and a few tokens far
    above it (a handful within a few nats of each other, as after "The capital of France is")."""
    logits = rng.normal(0.0, 2.0, vocab_size).astype(np.float32)
    top = rng.choice(vocab_size, size=12, replace=False)
    logits[top] += rng.uniform(6.0, 14.0, size=12).astype(np.float32)
    return logits


def fake_history(rng: np.random.Generator, vocab_size: int, length: int = 256) -> list[int]:
    """Token ids with the repetition real text has: a small working vocabulary and repeated phrases."""
    words = rng.choice(vocab_size, size=64, replace=False)
    history: list[int] = []
    while len(history) < length:
        if history and rng.random() < 0.3:
            start = int(rng.integers(0, len(history)))
            history.extend(history[start : start + int(rng.integers(2, 8))])
        else:
            history.append(int(words[rng.integers(0, 64)]))
    return history[:length]


def chain_cost_ms(
    params: SamplingParams,
    vocab_size: int = VOCAB_SIZE,
    steps: int = 200,
    seed: int = 0,
    top_n: int = TOP_N,
    clock: Callable[[], float] = time.perf_counter,
    logits: Sequence[np.ndarray] | None = None,
) -> float:
    """Median milliseconds per ``chain.step`` (with ``top_n`` alternatives) over ``steps`` tokens;
    the history grows by the picked token each step, as in a real run. ``clock``: wall time, or
    ``time.thread_time`` (CPU time, which other work on a shared machine inflates less).
    ``logits``: float32 [V] rows to step on in turn (a model's: ``model_logits``) instead of 16
    made-up ones of ``vocab_size``."""
    rng = np.random.default_rng(seed)
    if logits is None:
        logits = made_up_rows(vocab_size, rng)
    history = fake_history(rng, len(logits[0]))
    chain = SamplerChain(params)
    draws = np.random.default_rng(seed)
    for i in range(5):  # warm-up
        chain.step(logits[i], history, draws)
    times = []
    for i in range(steps):
        start = clock()
        trace = chain.step(logits[i % len(logits)], history, draws, top_n=top_n)
        times.append(clock() - start)
        history.append(trace.token)
    return float(np.median(times) * 1e3)


def made_up_rows(vocab_size: int, rng: np.random.Generator | None = None) -> list[np.ndarray]:
    """The 16 rows of made-up logits ``chain_cost_ms`` steps on (``rng``: default seed 0)."""
    rng = np.random.default_rng(0) if rng is None else rng
    return [fake_logits(rng, vocab_size) for _ in range(16)]


def mass_past_head(logits: Sequence[np.ndarray]) -> float:
    """The mean share of probability (T = 1) outside the head, the tokens with e >= 2^-6 of the
    top: how often a draw at the defaults sends the pick searching the tail."""
    shares = []
    for row in logits:
        soft = Softmax(row.astype(np.float64))
        shares.append(1.0 - float(soft.e[soft.head].sum()) / soft.z)
    return float(np.mean(shares))


#: A fixed English text whose every position's logits ``model_logits`` takes.
MODEL_TEXT = (
    "A language model does not write a sentence at once. At every step it gives each token of its "
    "vocabulary a score, the scores become probabilities, and a sampler picks one token; the token is "
    "appended to the text and the model scores the next position. Temperature divides the scores "
    "before they become probabilities, so a low temperature sharpens the distribution and a high one "
    "flattens it. Top-k keeps only the k most likely tokens, top-p keeps the smallest set whose "
    "probabilities add up to p, and min-p drops every token far less likely than the best one. "
    "Penalties lower the scores of tokens that already appeared, which keeps the text from looping. "
    "With a fixed seed the same settings give the same text, which makes two runs easy to compare. "
    "The old lighthouse keeper climbed the stairs each evening, lit the lamp and watched the ships "
    "pass the rocks at the mouth of the harbour, writing their names in a book that nobody read."
)


def model_logits(model_dir: Path, positions: int = 160) -> list[np.ndarray]:
    """The built model's own float32 logits [V] at the first ``positions`` positions of
    ``MODEL_TEXT`` (completion mode; one prefill that keeps every position's logits)."""
    runtime = load_runtime(model_dir)
    ids = runtime.codec.encode(MODEL_TEXT, "completion")[:positions]
    rows = runtime.decoder.new_state(1).append_tokens(np.array([ids], dtype=np.int64), all_logits=True)[0]  # [S, V]
    return [np.ascontiguousarray(row) for row in rows]


EVERY_STAGE = dict(
    logit_bias={11: 2.0, 12: -5.0},
    repetition_penalty=1.1,
    frequency_penalty=0.2,
    presence_penalty=0.1,
    penalty_window=64,
    dry_multiplier=0.8,
    no_repeat_ngram_size=3,
    top_n_sigma=2.0,
    temperature=0.8,
    top_k=40,
    top_p=0.95,
    min_p=0.05,
    typical_p=0.95,
    epsilon_cutoff=3e-4,
    eta_cutoff=3e-4,
    xtc_probability=0.5,
    xtc_threshold=0.1,
    mirostat=2,
    seed=0,
)

CASES: dict[str, SamplingParams] = {
    "defaults": SamplingParams(),
    "every_stage": SamplingParams(**EVERY_STAGE),
    "every_stage_dynamic_temperature": SamplingParams(**EVERY_STAGE, dynatemp_range=0.5),
    "every_stage_temperature_last": SamplingParams(
        **EVERY_STAGE, sampler_order=tuple(n for n in DEFAULT_ORDER if n != "temperature") + ("temperature",)
    ),
    "temperature_0.7_top_p_0.9": SamplingParams(temperature=0.7, top_p=0.9),
    "greedy": SamplingParams(temperature=0.0),
    "typical_p_0.9_only": SamplingParams(typical_p=0.9),
    "min_p_0.05_only": SamplingParams(min_p=0.05),
}


#: The settings timed on a model's own logits (``--model-dir``).
MODEL_CASES = ("defaults", "greedy", "temperature_0.7_top_p_0.9", "every_stage")


def figures(steps: int = 200, vocab_size: int = VOCAB_SIZE) -> dict[str, float]:
    """Median ms per token for the defaults and for every stage on (for the engine's bench)."""
    return {name: round(chain_cost_ms(CASES[name], vocab_size, steps=steps), 4) for name in ("defaults", "every_stage")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m inference.sampling.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--malloc-defaults",
        action="store_true",
        help="leave glibc's malloc thresholds as they are (a worker raises them: inference/allocator.py)",
    )
    parser.add_argument("--steps", type=int, default=200, help="tokens per case (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every case (default 3): median and range")
    parser.add_argument("--cpu-clock", action="store_true", help="time each step on the thread's CPU clock, not the wall clock")
    parser.add_argument("--grammar-rounds", type=int, default=20, help="walks of each grammar's text (default 20)")
    parser.add_argument(
        "--model-dir",
        type=Path,
        action="append",
        default=[],
        help="also time the chain on this built model's own logits over a fixed text (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    load_before = os.getloadavg()
    raised = False if args.malloc_defaults else keep_freed_memory()
    clock = time.thread_time if args.cpu_clock else time.perf_counter
    rows_of = {model_dir.name: model_logits(model_dir) for model_dir in args.model_dir}
    taken: dict[str, dict[str, list[float]]] = {}  # "vocabulary" or model name -> case -> one median per round
    faults: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):  # interleaved: the machine's speed drifts from minute to minute
        for vocab_size in VOCAB_SIZES:
            fault = faults.setdefault(str(vocab_size), {})
            for name, params in CASES.items():
                before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                ms = chain_cost_ms(params, vocab_size, steps=args.steps, clock=clock)
                taken.setdefault(str(vocab_size), {}).setdefault(name, []).append(ms)
                fault[name] = round((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / (args.steps + 5), 1)
        for model, rows in rows_of.items():
            for name in MODEL_CASES:
                ms = chain_cost_ms(CASES[name], steps=args.steps, clock=clock, logits=rows)
                taken.setdefault(model, {}).setdefault(name, []).append(ms)
    median = lambda values: round(float(np.median(values)), 4)  # noqa: E731
    spread = lambda values: [round(min(values), 4), round(max(values), 4)]  # noqa: E731
    report = {str(v): {name: median(ms) for name, ms in taken[str(v)].items()} for v in VOCAB_SIZES}
    report_range = {str(v): {name: spread(ms) for name, ms in taken[str(v)].items()} for v in VOCAB_SIZES}
    past_head = {str(v): round(mass_past_head(made_up_rows(v)), 3) for v in VOCAB_SIZES}
    on_models = {
        model: {
            "vocab_size": len(rows[0]),
            "positions": len(rows),
            "mass_past_head": round(mass_past_head(rows), 3),
            **{name: median(ms) for name, ms in taken[model].items()},
            "range": {name: spread(ms) for name, ms in taken[model].items()},
        }
        for model, rows in rows_of.items()
    }
    grammar = grammar_bench.figures(args.grammar_rounds)["constraints"]
    print(
        json.dumps(
            {
                "unit": f"ms per token (median of {args.steps}), with the trace and its top-{TOP_N} alternatives",
                "clock": "thread CPU time" if args.cpu_clock else "wall",
                "rounds": args.rounds,
                "cost": report,  # by vocabulary size: the median over rounds
                "cost_range": report_range,  # [min, max] over rounds
                "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
                "page_faults_per_step": faults,
                "mass_past_head": past_head,  # mean share of the made-up logits' mass a draw at T = 1 finds past the head
                **({"on_model_logits": on_models} if on_models else {}),
                "grammar_us_per_token": {
                    name: {k: v for k, v in g.items() if k.startswith(("mask", "stage"))} for name, g in grammar.items()
                },
                "malloc_thresholds_raised": raised,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
