"""A built decoder driven by plain ``session.run`` calls, greedy, for ``python -m inference.bench
--bare-model-dir``: the cache comes back as arrays and is fed in again, so any build runs, including
one the engine cannot load (Gemma's unfused recipe-5 graph has no ``position_ids`` and grows its cache
by Concat). It measures the graph, not the generation loop: no sampler chain, no text."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from inference.model_dir import MODEL_FILE, SLIDING_MASK, TOKENIZER_FILE, read_manifest
from inference.model_kernels import register_beside


class BareSession:
    """Greedy decoding of ``model_dir``'s ``model.onnx`` with ``threads`` threads."""

    def __init__(
        self, model_dir: Path, threads: int, prompt: str, context_steps: int, random_ids: Callable[[int], list[int]]
    ) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        register_beside(options, model_dir / MODEL_FILE)  # our kernel library, for a model built with it
        self.session = ort.InferenceSession(str(model_dir / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        self.name = f"bare {model_dir.name}"
        shapes = read_manifest(model_dir)["shapes"]
        self.kv_shape = (1, int(shapes["num_key_value_heads"]), 0, int(shapes["head_dim"]))
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.past_names = [n for n in (i.name for i in self.session.get_inputs()) if n.startswith("past_key_values.")]
        self.output_names = [o.name for o in self.session.get_outputs()]
        self.prompt = Tokenizer.from_file(str(model_dir / TOKENIZER_FILE)).encode(prompt).ids
        self.context_steps = context_steps
        self.random_ids = random_ids  # a prompt of that many token ids

    def _forward(self, ids: list[int], past: dict[str, np.ndarray]) -> tuple[int, dict[str, np.ndarray]]:
        """The greedy next token after ``ids`` on ``past``, and the cache grown by them."""
        done = next(iter(past.values())).shape[2]
        feed = {
            "input_ids": np.array([ids], np.int64),  # [1, n]
            "attention_mask": np.ones((1, done + len(ids)), np.int64),  # [1, past + n]
            **past,
        }
        if "position_ids" in self.inputs:
            feed["position_ids"] = np.arange(done, done + len(ids), dtype=np.int64)[None, :]  # [1, n]
        if "logits_to_keep" in self.inputs:
            feed["logits_to_keep"] = np.array(1, np.int64)
        if SLIDING_MASK in self.inputs:  # the sliding layers' buffers hold every position here, as the others'
            feed[SLIDING_MASK] = feed["attention_mask"]
        out = dict(zip(self.output_names, self.session.run(None, feed)))
        return int(out["logits"][0, -1].argmax()), {p: out[p.replace("past_key_values", "present")] for p in self.past_names}

    def _greedy(self, prompt: list[int], tokens: int) -> float:
        token, past = self._forward(prompt, {p: np.zeros(self.kv_shape, np.float32) for p in self.past_names})
        began = time.perf_counter()
        for _ in range(tokens):
            token, past = self._forward([token], past)
        return tokens / (time.perf_counter() - began)

    def decode(self, tokens: int) -> float:
        return self._greedy(self.prompt, tokens)

    def decode_at(self, context: int, batch: int = 1) -> float:
        return self._greedy(self.random_ids(context), self.context_steps)

    def prefill(self, length: int) -> float:
        ids = self.random_ids(length)
        began = time.perf_counter()
        self._forward(ids, {p: np.zeros(self.kv_shape, np.float32) for p in self.past_names})
        return time.perf_counter() - began
