"""Speculative decoding against plain decoding, on three kinds of prompt, in the same run.

    python -m inference.bench --speculative 2,4,8 [--drafts prompt_lookup,fast] [--keep-drafting fast]
                              [--tokens 128] [--rounds 3] [--threads 2] [--temperature 0]

Each round runs every prompt kind plainly, then with each draft source (``--drafts``: prompt
lookup, and ``fast``, the build's fast variant as a draft model, when it is built) at each k, in
turn (the rounds interleave, so the machine's load falls on all alike), and llama.cpp's plain
greedy decode on the same GGUF when ``llama_cpp`` imports (the decoder alone: no sampler chain, no
trace). Every run of ours is a websocket run's work: the full sampler chain (``--temperature``,
seeded), top-20 alternatives traced, text streamed, ``--tokens`` new tokens (end-of-sequence
ignored), the switch-off rule on (``inference.speculative.switch_off``: a draft that cannot pay
never starts, one with low acceptance stops); the sources named by ``--keep-drafting`` run a second
time at each k with ``switch_off`` false ("kept drafting"), drafting whatever it costs. Figures per
kind and setting, as min/median/max over rounds: decode tokens/s (the run's own
``decode_tokens_per_s``, drafting included), its ratio to the plain run of the same round, the
acceptance rate (accepted / drafted), the tokens each decoder pass made, in how many runs
speculation was switched off (and by which rule), and what a drafted token cost: the wall time
inside the draft source's ``propose`` per drafted token, over the plain run's time per token in the
same round (``switch_off.DRAFT_TOKEN_COST`` is this figure). At temperature 0 the report also says
whether every speculative run gave the plain run's tokens (it must). The machine is shared: the
load average is reported before and after.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from inference.bench.concurrency import TOP_N
from inference.bench.peers import LlamaCppModel
from inference.decoding.generation import Finished, GenerationRequest, TokenStep, Verification, run
from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.model_dir import SMOLLM_DOCUMENT_START, default_model_dir
from inference.runtime import Runtime, load_runtime
from inference.sampling import SamplingParams
from inference.speculative import Draft, DraftSource, DraftSources

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


Setting = tuple[str, int, bool] | None  # (draft source, k, switch_off), or None for the plain run


class DraftClock:
    """A run's draft source with a stopwatch: the wall seconds inside its ``propose`` and the tokens it drafted."""

    def __init__(self, source: DraftSource) -> None:
        self.source = source
        self.name = source.name
        self.seconds = 0.0
        self.tokens = 0

    def propose(self, context: Sequence[int], k: int) -> Draft:
        began = time.perf_counter()
        draft = self.source.propose(context, k)
        self.seconds += time.perf_counter() - began
        self.tokens += len(draft.tokens)
        return draft


class ClockedSources(DraftSources):
    """``DraftSources`` (the same target, models and loader) whose latest run's source is timed
    (``last``): the benchmark's instrument, made once for all its runs."""

    def __init__(self, sources: DraftSources) -> None:
        super().__init__(sources.target, sources.models_root, sources.load)
        self.last: DraftClock | None = None

    def new(self, params: SpeculativeParams, sampling: SamplingParams, seed: int) -> DraftSource:
        self.last = DraftClock(super().new(params, sampling, seed))
        return self.last


def one_run(
    runtime: Runtime, prompt: str, tokens: int, temperature: float, setting: Setting, drafts: ClockedSources | None = None
) -> dict[str, Any]:
    request = GenerationRequest(
        prompt,
        sampling=SamplingParams(temperature=temperature, seed=0),
        loop=LoopParams(max_tokens=tokens, ignore_eos=True),
        top_n=TOP_N,
        speculative=None if setting is None else SpeculativeParams(*setting),
    )
    clocked = drafts or ClockedSources(DraftSources())
    clocked.last = None
    token_ids: list[int] = []
    passes = 0
    finished: Finished | None = None
    for item in run(runtime, request, drafts=clocked):
        if isinstance(item, TokenStep):
            token_ids.append(item.token_id)
            passes += 1
        elif isinstance(item, Verification):
            passes -= len(item.checks)  # the verification's tokens came from one pass
        elif isinstance(item, Finished):
            finished = item
    assert finished is not None
    totals = finished.speculative
    clock = clocked.last
    return {
        "tokens_per_s": float(finished.decode_tokens_per_s or 0.0),
        "acceptance": None if totals is None or not totals.checked else totals.accepted / totals.checked,
        "tokens_per_pass": len(token_ids) / max(passes, 1),
        "switched_off_at": None if totals is None else totals.switched_off_at,
        "rule": None if totals is None or totals.reason is None else totals.reason.rule,
        "draft_s_per_token": None if clock is None or not clock.tokens else clock.seconds / clock.tokens,
        "token_ids": token_ids,
    }


def label(setting: Setting) -> str:
    if setting is None:
        return "plain"
    draft, k, switch_off = setting
    return f"{draft} k={k}" + ("" if switch_off else " kept drafting")


def measure(
    runtime: Runtime,
    ks: list[int],
    tokens: int,
    rounds: int,
    temperature: float,
    draft_names: tuple[str, ...] = ("prompt_lookup",),
    drafts: DraftSources | None = None,
    llama_cpp: Callable[[str, int], float] | None = None,
    keep_drafting: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``drafts`` serves the named draft models; ``keep_drafting``: sources also run with
    ``switch_off`` false; ``llama_cpp(prompt, tokens)``: its plain decode's tokens/s."""
    load_before = os.getloadavg()
    clocked = ClockedSources(drafts or DraftSources())
    settings: list[Setting] = [
        None,
        *((name, k, True) for name in draft_names for k in ks),
        *((name, k, False) for name in keep_drafting for k in ks),
    ]
    one_run(runtime, PROMPTS["code"], 8, temperature, None)  # warm-up
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {kind: {} for kind in PROMPTS}
    peer: dict[str, list[float]] = {kind: [] for kind in PROMPTS}
    for _ in range(rounds):
        for kind, prompt in PROMPTS.items():
            for setting in settings:
                runs[kind].setdefault(label(setting), []).append(one_run(runtime, prompt, tokens, temperature, setting, clocked))
            if llama_cpp is not None:
                peer[kind].append(llama_cpp(prompt, tokens))
    figures: dict[str, dict[str, Any]] = {}
    for kind, by_setting in runs.items():
        plain = by_setting["plain"]
        figures[kind] = {"plain": {"tokens_per_s": spread([r["tokens_per_s"] for r in plain])}}
        if peer[kind]:
            figures[kind]["llama.cpp plain"] = {"tokens_per_s": spread(peer[kind])}
        for setting, results in by_setting.items():
            if setting == "plain":
                continue
            figures[kind][setting] = {
                "tokens_per_s": spread([r["tokens_per_s"] for r in results]),
                "speedup": spread([r["tokens_per_s"] / p["tokens_per_s"] for r, p in zip(results, plain)], 2),
                "acceptance": spread([r["acceptance"] or 0.0 for r in results], 2),
                "tokens_per_pass": spread([r["tokens_per_pass"] for r in results], 2),
                "switched_off": {
                    rule: sum(r["rule"] == rule for r in results)
                    for rule in ("cannot_pay", "low_acceptance")
                    if any(r["rule"] == rule for r in results)
                },
            }
            costs = [
                r["draft_s_per_token"] * p["tokens_per_s"]
                for r, p in zip(results, plain)
                if r["draft_s_per_token"] is not None and p["tokens_per_s"]
            ]
            if costs:  # a drafted token's cost in the same round's plain steps
                figures[kind][setting]["draft_token_cost"] = spread(costs, 2)
            if temperature == 0.0:
                figures[kind][setting]["same_tokens_as_plain"] = all(
                    r["token_ids"] == p["token_ids"] for r, p in zip(results, plain)
                )
    return {
        "speculative": {
            "drafts": list(draft_names),
            "kept_drafting": list(keep_drafting),
            "ks": ks,
            "new_tokens": tokens,
            "rounds": rounds,
            "temperature": temperature,
            "figures": figures,
            "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        }
    }


def served_drafts(runtime: Runtime, threads: int) -> DraftSources:
    """The draft sources a worker serves for ``runtime`` (draft models from beside the configured model)."""
    return DraftSources(
        runtime, default_model_dir().parent, lambda model_dir: load_runtime(model_dir, intra_op_threads=threads, spinning=False)
    )


def llama_cpp_decode(threads: int) -> Callable[[str, int], float] | None:
    """llama.cpp's plain greedy decode (tokens/s after the prompt) on the GGUF our model is built
    from, or None when ``llama_cpp`` does not import."""
    try:
        model = LlamaCppModel(threads, 2048)
    except ImportError:
        return None
    llm = model.llm

    def decode(prompt: str, tokens: int) -> float:
        return model.greedy_tokens_per_s(
            llm.tokenize((SMOLLM_DOCUMENT_START + prompt).encode(), add_bos=False, special=True), tokens
        )

    return decode


def spread(values: list[float], digits: int = 1) -> dict[str, float]:
    return {
        "min": round(min(values), digits),
        "median": round(statistics.median(values), digits),
        "max": round(max(values), digits),
    }
