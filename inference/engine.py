"""The ONNX Runtime decoder: ids in, logits out, with the KV cache kept inside ONNX Runtime.

The engine knows nothing about text or sampling. It supports the one layout optimum's
``text-generation-with-past`` export produces:

    inputs:  input_ids [B, S] int64, attention_mask [B, P+S] int64, position_ids [B, S] int64,
             past_key_values.{i}.key / .value [B, kv_heads, P, head_dim] float32
    outputs: logits [B, S, V] float32, present.{i}.key / .value [B, kv_heads, P+S, head_dim]

The first call takes zero-length pasts. Each call's ``present.*`` stay as ONNX Runtime values and
are bound as the next call's ``past_key_values.*`` through an IO binding, so the cache is never
copied through numpy between steps.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import onnxruntime as ort

log = logging.getLogger(__name__)

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"


@dataclass(frozen=True)
class ModelShape:
    num_layers: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    context_window: int


def choose_providers(requested: Sequence[str]) -> list[str]:
    """The requested execution providers that this ONNX Runtime has, in order, always ending with CPU."""
    available = set(ort.get_available_providers())
    chosen = [p for p in requested if p in available and p != CPU]
    missing = [p for p in requested if p not in available]
    if missing:
        log.warning("execution providers %s are not available here (have %s); falling back", missing, sorted(available))
    return [*chosen, CPU]


class Decoder:
    """One ONNX Runtime session over the exported decoder."""

    def __init__(
        self,
        model_path: Path,
        shape: ModelShape,
        providers: Sequence[str] = (CPU,),
        intra_op_threads: int = 2,
    ) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(model_path), options, providers=choose_providers(providers))
        self.provider = self.session.get_providers()[0]
        self.shape = shape
        self._past_names = [f"past_key_values.{i}.{kind}" for i in range(shape.num_layers) for kind in ("key", "value")]
        self._present_names = [f"present.{i}.{kind}" for i in range(shape.num_layers) for kind in ("key", "value")]
        inputs = {i.name for i in self.session.get_inputs()}
        outputs = {o.name for o in self.session.get_outputs()}
        expected_in = {"input_ids", "attention_mask", "position_ids", *self._past_names}
        expected_out = {"logits", *self._present_names}
        if not expected_in <= inputs or not expected_out <= outputs:
            raise ValueError(
                f"{model_path} is not a text-generation-with-past export of {shape.num_layers} layers: "
                f"missing inputs {sorted(expected_in - inputs)}, outputs {sorted(expected_out - outputs)}"
            )
        self._device = "cuda" if self.provider == CUDA else "cpu"
        log.info("decoder loaded from %s on %s with %d intra-op threads", model_path, self.provider, intra_op_threads)

    def new_state(self, batch_size: int = 1, use_cache: bool = True) -> "DecodeState":
        return DecodeState(self, batch_size, use_cache)

    def empty_past(self, batch_size: int) -> list[ort.OrtValue]:
        # past: [B, kv_heads, 0, head_dim]
        empty = np.zeros((batch_size, self.shape.kv_heads, 0, self.shape.head_dim), dtype=np.float32)
        return [ort.OrtValue.ortvalue_from_numpy(empty, self._device, 0) for _ in self._past_names]

    def run(
        self,
        input_ids: np.ndarray,  # [B, S] int64
        past: list[ort.OrtValue],  # 2 × layers of [B, kv_heads, P, head_dim]
        past_length: int,
    ) -> tuple[np.ndarray, list[ort.OrtValue]]:
        """One forward pass; returns the last position's logits [B, V] and the new cache."""
        batch, length = input_ids.shape
        attention_mask = np.ones((batch, past_length + length), dtype=np.int64)
        position_ids = np.broadcast_to(np.arange(past_length, past_length + length, dtype=np.int64), (batch, length))
        binding = self.session.io_binding()
        binding.bind_cpu_input("input_ids", np.ascontiguousarray(input_ids, dtype=np.int64))
        binding.bind_cpu_input("attention_mask", attention_mask)
        binding.bind_cpu_input("position_ids", np.ascontiguousarray(position_ids))
        for name, value in zip(self._past_names, past):
            binding.bind_ortvalue_input(name, value)
        binding.bind_output("logits")
        for name in self._present_names:
            binding.bind_output(name, self._device)
        self.session.run_with_iobinding(binding)
        outputs = binding.get_outputs()
        logits = outputs[0].numpy()  # [B, S, V]
        return logits[:, -1, :], list(outputs[1:])


class DecodeState:
    """The running state of one sequence batch: ids fed so far and the cache that goes with them.

    ``append_tokens`` feeds ids (the whole prompt at once, then one token per step) and returns the
    logits for the next position. With ``use_cache=False`` every call recomputes the whole
    sequence from scratch, which is what decoding costs without a KV cache.
    """

    def __init__(self, decoder: Decoder, batch_size: int, use_cache: bool) -> None:
        self.decoder = decoder
        self.batch_size = batch_size
        self.use_cache = use_cache
        self.ids = np.zeros((batch_size, 0), dtype=np.int64)  # [B, T]
        self._past = decoder.empty_past(batch_size)

    @property
    def length(self) -> int:
        return int(self.ids.shape[1])

    def append_tokens(self, new_ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """Feeds ``new_ids`` ([S] for every row, or [B, S]) and returns the next logits [B, V] float32."""
        block = np.asarray(new_ids, dtype=np.int64)
        if block.ndim == 1:
            block = np.broadcast_to(block, (self.batch_size, block.shape[0]))
        if block.shape[0] != self.batch_size or block.shape[1] == 0:
            raise ValueError(f"expected ids shaped [{self.batch_size}, S>0], got {list(block.shape)}")
        if self.length + block.shape[1] > self.decoder.shape.context_window:
            raise ValueError(
                f"{self.length + block.shape[1]} tokens exceed the context window of {self.decoder.shape.context_window}"
            )
        self.ids = np.concatenate([self.ids, block], axis=1)
        if self.use_cache:
            logits, self._past = self.decoder.run(block, self._past, self.length - block.shape[1])
        else:
            logits, _ = self.decoder.run(self.ids, self.decoder.empty_past(self.batch_size), 0)
        return logits

    def reorder(self, rows: Sequence[int]) -> None:
        """Keeps the given rows (with repeats) as the new batch: beam search's cache shuffle."""
        index = np.asarray(rows, dtype=np.int64)
        self.ids = self.ids[index]
        self.batch_size = len(index)
        if self.use_cache:
            self._past = [
                ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(value.numpy()[index]), self.decoder._device, 0)
                for value in self._past
            ]
        else:
            self._past = self.decoder.empty_past(self.batch_size)
