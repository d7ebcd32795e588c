"""What the grammar stage costs on the served model's vocabulary (49,152 tokens for SmolLM2).

``python -m inference.sampling.grammar_bench`` prints JSON: the time to compile the vocabulary
(once per runtime), and per constraint (a JSON Schema, a larger schema, a regex, a choice) the
time to check and compile it (what making ``SamplingParams`` costs), to start its matcher, and the
per-token cost of the mask (llguidance's bitmask and its unpacking to one bool per token) and of
the whole stage (mask + keeping the allowed candidates), median and p95, driven along a valid text
token by token as a run would. The sampler benchmark (``inference.sampling.bench``) prints the
per-token figures too.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from inference.model_dir import TOKENIZER_FILE, default_model_dir, read_manifest
from inference.sampling.candidates import Candidates, frozen
from inference.sampling.stages.base import StepContext
from inference.sampling.stages.grammar import GRAMMAR, Grammar, GrammarVocabulary

PEOPLE = [{"name": n, "age": a, "role": r} for n, a, r in [("Ada", 36, "admin"), ("Alan", 41, "user"), ("Grace", 85, "admin"), ("Linus", 54, "guest"), ("Barbara", 71, "user")]]  # fmt: skip

#: name -> (the constraint, a text that satisfies it: the path the matcher is driven along)
CONSTRAINTS: dict[str, tuple[dict[str, Any], str]] = {
    "json_schema": (
        {
            "type": "json_schema",
            "schema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 30},
                    "population": {"type": "integer"},
                    "capital": {"type": "boolean"},
                },
                "required": ["name", "population", "capital"],
                "additionalProperties": False,
            },
        },
        '{"name": "Paris", "population": 2148000, "capital": true}',
    ),
    "json_schema_array_of_5": (
        {
            "type": "json_schema",
            "schema": {
                "type": "array",
                "minItems": 5,
                "maxItems": 5,
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "maxLength": 200},
                        "age": {"type": "integer", "minimum": 0},
                        "role": {"enum": ["admin", "user", "guest"]},
                    },
                    "required": ["name", "age", "role"],
                    "additionalProperties": False,
                },
            },
        },
        json.dumps(PEOPLE, separators=(", ", ": ")),
    ),
    "regex": ({"type": "regex", "pattern": "[A-Z][a-z]{2,12}, [0-9]{4}"}, "Paris, 1850"),
    "choice": ({"type": "choice", "options": ["red", "green", "blue"]}, "green"),
}


def load_vocabulary() -> tuple[Tokenizer, GrammarVocabulary, float]:
    """The served model's tokenizer, its grammar vocabulary and the seconds that took."""
    model_dir = default_model_dir()
    manifest = read_manifest(model_dir)
    tokenizer = Tokenizer.from_file(str(model_dir / TOKENIZER_FILE))
    start = time.perf_counter()
    vocabulary = GrammarVocabulary.from_tokenizer_json(
        tokenizer.to_str(), int(manifest["shapes"]["vocab_size"]), manifest["special_tokens"]["eos_token_ids"]
    )
    return tokenizer, vocabulary, time.perf_counter() - start


def measure(
    grammar: dict[str, Any], text: str, tokenizer: Tokenizer, vocabulary: GrammarVocabulary, rounds: int
) -> dict[str, float]:
    """Compile and start costs (ms, best of ``rounds``) and per-token mask and stage costs (µs)."""
    compile_s, start_s, mask_s, stage_s = [], [], [], []
    tokens = tokenizer.encode(text, add_special_tokens=False).ids + [vocabulary.eos_ids[0]]
    ids = frozen(np.arange(vocabulary.vocab_size, dtype=np.int64))
    cand = Candidates(ids, np.random.default_rng(0).normal(size=vocabulary.vocab_size), vocabulary.vocab_size)
    ctx = StepContext((), vocabulary.vocab_size)
    for _ in range(rounds):
        t0 = time.perf_counter()
        spec = GRAMMAR.check(grammar)
        t1 = time.perf_counter()
        stage = Grammar(spec, vocabulary)
        t2 = time.perf_counter()
        compile_s.append(t1 - t0)
        start_s.append(t2 - t1)
        for token in tokens:
            t0 = time.perf_counter()
            stage.allowed()
            t1 = time.perf_counter()
            stage._mask = None  # (measure the whole stage from a cold mask too)
            stage.apply(cand, ctx)
            t2 = time.perf_counter()
            mask_s.append(t1 - t0)
            stage_s.append(t2 - t1)
            stage.accept(token, cand)
    return {
        "check_and_compile_ms": round(min(compile_s) * 1e3, 3),
        "start_matcher_ms": round(min(start_s) * 1e3, 3),
        "tokens": len(tokens),
        "mask_us_median": round(float(np.median(mask_s)) * 1e6, 1),
        "mask_us_p95": round(float(np.percentile(mask_s, 95)) * 1e6, 1),
        "stage_us_median": round(float(np.median(stage_s)) * 1e6, 1),
        "stage_us_p95": round(float(np.percentile(stage_s, 95)) * 1e6, 1),
    }


def figures(rounds: int = 20) -> dict[str, Any]:
    tokenizer, vocabulary, vocab_s = load_vocabulary()
    return {
        "vocab_size": vocabulary.vocab_size,
        "vocabulary_compile_s": round(vocab_s, 3),
        "constraints": {name: measure(g, text, tokenizer, vocabulary, rounds) for name, (g, text) in CONSTRAINTS.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m inference.sampling.grammar_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="times each constraint is compiled and walked (default 20)")
    args = parser.parse_args(argv)
    print(json.dumps(figures(args.rounds), indent=2))


if __name__ == "__main__":
    main()
