"""How far a built model is from the fp32 export it came from, and how fast it decodes.

    python -m inference.modelbuild.quality [MODEL] --reference FP32.onnx
    python -m inference.modelbuild.quality [MODEL] --export-reference DIR   # exports the fp32 model into DIR once (~70 s)
    python -m inference.modelbuild.quality [MODEL] --reference FP32.onnx --llama-cpp   # the peer judged too

MODEL defaults to the configured model directory's ``model.onnx``. Prints JSON:

- ``agreement`` and ``mean_kl``: over every position of :data:`MIXED_TEXT` (English and Python,
  ~340 tokens, one prefill each), how often the two models' top tokens agree, and the mean
  KL(fp32 ‖ model) of their next-token distributions, in nats;
- ``greedy``: the greedy continuation of :data:`GREEDY_PROMPT` with nothing, ``<|endoftext|>`` and
  ``<|im_start|>`` in front, for both models;
- ``decode_tokens_per_s``: a plain loop (numpy KV cache, 2 threads), 64 tokens after the prompt,
  for both models, measured in the same run (the machine is shared: compare the ratio);
- with ``--llama-cpp`` (the ``peers`` extra): ``llama.cpp``, the same agreement and KL for
  llama.cpp on the very GGUF both models come from, its logits read token by token as its decode
  computes them: how far the peer itself is from the fp32 export, against the same bound.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from .. import model_dir as md
from ..bench.peers import LlamaCppModel
from ..model_kernels import register_beside
from ..models import DEFAULT_MODEL, ModelEntry, entry_for, entry_named
from .reference import export_reference

MIXED_TEXT = """The history of the printing press begins in the fifteenth century, when Johannes Gutenberg \
combined movable metal type, oil-based ink and a wooden press adapted from wine making. Within fifty \
years presses were running in more than two hundred European cities, and the price of a book fell \
so far that a clerk could own several. Historians still argue about how much the press changed what \
people believed, but few doubt that it changed how quickly ideas travelled.

def merge_sorted(left, right):
    \"\"\"Merge two sorted lists into one sorted list.\"\"\"
    result = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            result.append(left[i])
            i += 1
        else:
            result.append(right[j])
            j += 1
    result.extend(left[i:])
    result.extend(right[j:])
    return result

To make a simple tomato soup, soften an onion and two cloves of garlic in olive oil, add a tin of \
chopped tomatoes and half a litre of stock, simmer for twenty minutes, then blend until smooth. \
Season with salt, pepper and a pinch of sugar, and serve with crusty bread."""

GREEDY_PROMPT = "The capital of France is"


def open_session(path: Path, threads: int = 2):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    register_beside(options, Path(path))  # our kernel library, for a model built with it
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def empty_past(session) -> dict[str, np.ndarray]:
    past = {}
    for i in session.get_inputs():
        if i.name.startswith("past_key_values."):
            past[i.name] = np.zeros((1, i.shape[1], 0, i.shape[3]), md.CACHE_DTYPES[i.type])  # [1, kv_heads, 0, head_dim]
    return past


def step(session, ids: list[int], past: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One forward pass over ``ids`` after ``past``: logits ``[len(ids), vocab]`` and the new cache."""
    done = next(iter(past.values())).shape[2]
    feed = {
        "input_ids": np.array([ids], np.int64),  # [1, n]
        "attention_mask": np.ones((1, done + len(ids)), np.int64),  # [1, past + n]
        **past,
    }
    inputs = {i.name for i in session.get_inputs()}
    if "position_ids" in inputs:  # Gemma's export derives positions from attention_mask
        feed["position_ids"] = np.arange(done, done + len(ids), dtype=np.int64)[None, :]  # [1, n]
    if "logits_to_keep" in inputs:
        feed["logits_to_keep"] = np.array(0, np.int64)  # every position
    if md.SLIDING_MASK in inputs:  # Gemma's sliding layers: their buffers hold every position here, as the others'
        feed[md.SLIDING_MASK] = feed["attention_mask"]
    names = [o.name for o in session.get_outputs()]
    out = dict(zip(names, session.run(None, feed)))
    return out["logits"][0], {p: out[p.replace("past_key_values", "present")] for p in past}


def greedy(session, ids: list[int], n: int) -> tuple[list[int], float]:
    """``n`` greedy tokens after ``ids``; returns them and the decode speed (tokens/s after the first)."""
    logits, past = step(session, ids, empty_past(session))
    out = [int(logits[-1].argmax())]
    start = time.perf_counter()
    for _ in range(n - 1):
        logits, past = step(session, out[-1:], past)
        out.append(int(logits[-1].argmax()))
    elapsed = time.perf_counter() - start
    return out, (n - 1) / elapsed if elapsed > 0 else float("inf")


def log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def divergence(reference: np.ndarray, logits: np.ndarray) -> dict[str, float]:
    """Top-1 agreement and mean KL(reference ‖ logits) over the rows of two ``[positions, vocab]`` arrays."""
    ref, got = log_softmax(reference), log_softmax(logits)
    kl = (np.exp(ref) * (ref - got)).sum(axis=-1)
    return {
        "agreement": round(float((reference.argmax(-1) == logits.argmax(-1)).mean()), 4),
        "mean_kl": round(float(kl.mean()), 5),
        "max_kl": round(float(kl.max()), 4),
        "positions": int(len(kl)),
    }


def evaluate(
    model: Path, reference: Path, tokenizer_path: Path, llama_cpp: bool = False, entry: ModelEntry | None = None
) -> dict[str, Any]:
    """The figures the module docstring lists, for ``model`` against ``reference`` (``entry``: the
    model's registry entry, for the tokens put in front; default the default model's)."""
    plan = (entry or entry_for(DEFAULT_MODEL)).recipe
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    sessions = {"model": open_session(model), "fp32": open_session(reference)}
    text_ids = [plan.quality_text_start] + tokenizer.encode(MIXED_TEXT, add_special_tokens=False).ids
    logits = {name: step(s, text_ids, empty_past(s))[0] for name, s in sessions.items()}
    prompt = tokenizer.encode(GREEDY_PROMPT, add_special_tokens=False).ids
    result: dict[str, Any] = {"model": str(model), "reference": str(reference)}
    result.update(divergence(logits["fp32"], logits["model"]))
    if llama_cpp:
        result["llama.cpp"] = divergence(logits["fp32"], llama_cpp_logits(text_ids))
    result["greedy"] = {
        f"{name}/{prefix}": tokenizer.decode(greedy(s, [*start, *prompt], 8)[0])
        for prefix, start in plan.quality_prompt_starts.items()
        for name, s in sessions.items()
    }
    result["decode_tokens_per_s"] = {name: round(greedy(s, prompt, 64)[1], 1) for name, s in sessions.items()}
    return result


def llama_cpp_logits(ids: list[int], threads: int = 2) -> np.ndarray:
    """llama.cpp's logits ``[len(ids), vocab]`` over ``ids`` (no BOS added), on the GGUF our model
    is built from, fed one token at a time as its decode runs."""
    model = LlamaCppModel(threads, context=len(ids) + 1)
    rows = []
    for token in ids:
        model.llm.eval([token])
        rows.append(model.last_logits().copy())
    return np.stack(rows)  # [n, V]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inference.modelbuild.quality", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", type=Path, default=None, help="the model.onnx to judge (default: the built one)")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--reference", type=Path, help="the fp32 export's model.onnx")
    group.add_argument("--export-reference", type=Path, metavar="DIR", help="export the fp32 model into DIR (once) and use it")
    parser.add_argument("--llama-cpp", action="store_true", help="judge llama.cpp on the same GGUF too (the peers extra)")
    args = parser.parse_args(argv)
    if args.llama_cpp and importlib.util.find_spec("llama_cpp") is None:
        parser.error("--llama-cpp needs llama-cpp-python, the peers extra (pip install '.[peers]')")
    model = args.model or md.default_model_dir() / md.MODEL_FILE
    reference = args.reference or export_reference(args.export_reference)
    tokenizer = model.parent / md.TOKENIZER_FILE
    if not tokenizer.is_file():
        tokenizer = md.default_model_dir() / md.TOKENIZER_FILE
    try:
        entry = entry_named(md.read_manifest(model.parent)["model_name"])
    except md.ModelNotBuiltError:
        entry = None
    result = evaluate(model, reference, tokenizer, llama_cpp=args.llama_cpp, entry=entry)
    json.dump(result, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    raise SystemExit(main())
