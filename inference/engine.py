"""The ONNX Runtime decoder: ids in, logits out, with the KV cache kept in place across steps.

The engine knows nothing about text or sampling. It supports the layout ``inference.modelbuild``
produces (optimum's ``text-generation-with-past`` names, GroupQueryAttention inside):

    inputs:  input_ids [B, S] int64, attention_mask [B, T] int64 (T = tokens so far incl. these),
             position_ids [B, S] int64, logits_to_keep [] int64 (0: every position),
             past_key_values.{i}.key / .value [B, kv_heads, C, head_dim] float32
    outputs: logits [B, logits_to_keep or S, V] float32, present.{i}.key / .value (the same buffers)

The cache is one buffer per layer and kind, ``[B, kv_heads, capacity, head_dim]``, bound as both
``past_key_values.*`` and ``present.*``: GroupQueryAttention reads row ``b``'s first
``seqlens_k[b]`` positions (from the attention mask's row sums) and writes the new keys and
values after them, in place, so a step copies nothing but its own token's keys and values. When a
sequence outgrows the capacity the buffers are reallocated at twice the size (capped at the
context window), the only copy of the cache.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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


class KVCache:
    """The key and value buffers of every layer, ``[B, kv_heads, capacity, head_dim]`` float32 each,
    in ``past_key_values.*`` order; the first ``length`` positions of every row hold the cache."""

    MIN_CAPACITY = 256

    def __init__(self, shape: ModelShape, batch_size: int, capacity: int, device: str) -> None:
        self.shape = shape
        self.device = device
        self.buffers = [self._zeros(batch_size, capacity) for _ in range(2 * shape.num_layers)]
        self.values = [self._wrap(buffer) for buffer in self.buffers]

    @property
    def batch_size(self) -> int:
        return int(self.buffers[0].shape[0])

    @property
    def capacity(self) -> int:
        return int(self.buffers[0].shape[2])

    def _zeros(self, batch_size: int, capacity: int) -> np.ndarray:
        return np.zeros((batch_size, self.shape.kv_heads, capacity, self.shape.head_dim), dtype=np.float32)

    def _wrap(self, buffer: np.ndarray) -> ort.OrtValue:
        # On CPU the OrtValue shares the numpy buffer's memory: ONNX Runtime writes into it in place.
        return ort.OrtValue.ortvalue_from_numpy(buffer, self.device, 0)

    def _host(self, index: int) -> np.ndarray:
        return self.buffers[index] if self.device == "cpu" else self.values[index].numpy()

    def reserve(self, needed: int, length: int) -> None:
        """Room for ``needed`` positions, keeping the first ``length``: grows to max(needed, 2 × capacity)."""
        if needed <= self.capacity:
            return
        capacity = min(max(needed, 2 * self.capacity, self.MIN_CAPACITY), self.shape.context_window)
        self._replace(lambda old: old[:, :, :length], capacity)

    def reorder(self, index: np.ndarray, length: int) -> None:
        """Rows ``index`` (repeats allowed) become the batch, each with its cache (in place when the
        batch keeps its size and the buffers live in host memory: only the first ``length`` positions move)."""
        if len(index) == self.batch_size and self.device == "cpu":
            for buffer in self.buffers:
                buffer[:, :, :length] = buffer[index, :, :length]  # the right side is a copy: no aliasing
            return
        self._replace(lambda old: old[index, :, :length], self.capacity, batch_size=len(index))

    def _replace(self, kept, capacity: int, batch_size: int | None = None) -> None:
        batch_size = self.batch_size if batch_size is None else batch_size
        for i in range(len(self.buffers)):
            part = kept(self._host(i))  # [B', kv_heads, length, head_dim]
            buffer = self._zeros(batch_size, capacity)
            buffer[:, :, : part.shape[2]] = part
            self.buffers[i], self.values[i] = buffer, self._wrap(buffer)


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
        expected_in = {"input_ids", "attention_mask", "position_ids", "logits_to_keep", *self._past_names}
        expected_out = {"logits", *self._present_names}
        if not expected_in <= inputs or not expected_out <= outputs:
            raise ValueError(
                f"{model_path} is not a decoder built by inference.modelbuild with {shape.num_layers} layers: "
                f"missing inputs {sorted(expected_in - inputs)}, outputs {sorted(expected_out - outputs)}"
            )
        self._device = "cuda" if self.provider == CUDA else "cpu"
        log.info("decoder loaded from %s on %s with %d intra-op threads", model_path, self.provider, intra_op_threads)

    def new_state(self, batch_size: int = 1, use_cache: bool = True) -> DecodeState:
        return DecodeState(self, batch_size, use_cache)

    def empty_past(self, batch_size: int, capacity: int = KVCache.MIN_CAPACITY) -> KVCache:
        """An empty cache with room for ``capacity`` positions (it grows when needed)."""
        return KVCache(self.shape, batch_size, min(capacity, self.shape.context_window), self._device)

    def run(
        self,
        input_ids: np.ndarray,  # [B, S] int64
        past: KVCache,
        past_length: int,
        all_logits: bool = False,
    ) -> tuple[np.ndarray, KVCache]:
        """One forward pass after ``past_length`` cached positions, appending to ``past`` in place.

        Returns the last position's logits [B, V] (with ``all_logits``, every position's: [B, S, V])
        and the cache, grown if it had to be."""
        batch, length = input_ids.shape
        total = past_length + length
        past.reserve(total, past_length)
        attention_mask = np.ones((batch, total), dtype=np.int64)
        position_ids = np.broadcast_to(np.arange(past_length, total, dtype=np.int64), (batch, length))
        binding = self.session.io_binding()
        binding.bind_cpu_input("input_ids", np.ascontiguousarray(input_ids, dtype=np.int64))
        binding.bind_cpu_input("attention_mask", attention_mask)
        binding.bind_cpu_input("position_ids", np.ascontiguousarray(position_ids))
        binding.bind_cpu_input("logits_to_keep", np.array(0 if all_logits else 1, dtype=np.int64))
        binding.bind_output("logits")  # first: get_outputs() lists outputs in binding order
        for past_name, present_name, value in zip(self._past_names, self._present_names, past.values):
            binding.bind_ortvalue_input(past_name, value)
            binding.bind_ortvalue_output(present_name, value)  # the same buffer: appended in place
        self.session.run_with_iobinding(binding)
        logits = binding.get_outputs()[0].numpy()  # [B, 1 or S, V]
        return (logits if all_logits else logits[:, -1, :]), past


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

    def append_tokens(self, new_ids: np.ndarray | Sequence[int], all_logits: bool = False) -> np.ndarray:
        """Feeds ``new_ids`` ([S] for every row, or [B, S]) and returns the next logits [B, V] float32
        (with ``all_logits``, the logits after each of the S positions: [B, S, V], e.g. to score a prompt)."""
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
            logits, self._past = self.decoder.run(block, self._past, self.length - block.shape[1], all_logits)
        else:
            logits, _ = self.decoder.run(self.ids, self.decoder.empty_past(self.batch_size, self.length), 0, all_logits)
            if all_logits:
                logits = logits[:, -block.shape[1] :]
        return logits

    def reorder(self, rows: Sequence[int]) -> None:
        """Keeps the given rows (with repeats) as the new batch: beam search's cache shuffle."""
        index = np.asarray(rows, dtype=np.int64)
        self.ids = self.ids[index]
        self.batch_size = len(index)
        if self.use_cache:
            self._past.reorder(index, self.length)
        else:
            self._past = self.decoder.empty_past(self.batch_size)
