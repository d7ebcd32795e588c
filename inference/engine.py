"""The ONNX Runtime decoder: ids in, logits out, with the KV cache kept in place across steps.

The engine knows nothing about text or sampling. It supports the layout ``inference.modelbuild``
produces (optimum's ``text-generation-with-past`` names, GroupQueryAttention inside: ONNX Runtime's, or
our kernel library's ``GroupAttention`` with the same contract):

    inputs:  input_ids [B, S] int64, attention_mask [B, T] int64 (T = tokens so far incl. these),
             position_ids [B, S] int64, logits_to_keep [] int64 (0: every position),
             past_key_values.{i}.key / .value [B, kv_heads, C, head_dim] float32
    outputs: logits [B, logits_to_keep or S, V] float32, present.{i}.key / .value (the same buffers)

The cache (``inference.kv_cache.KVCache``: its buffers, their growth, rows moved between slots)
is one buffer per layer and kind, ``[B, kv_heads, capacity, head_dim]``, bound as both
``past_key_values.*`` and ``present.*``: GroupQueryAttention reads row ``b``'s first
``seqlens_k[b]`` positions (from the attention mask's row sums) and writes the new keys and
values after them, in place, so a step copies nothing but its own token's keys and values.

Rows of one call may have different lengths (continuous batching, ``inference.batching.scheduler``): the
attention mask is right-padded (row ``b``: ones for its own total length, zeros after it) and
``position_ids`` counts from each row's own past length, so GroupQueryAttention reads and writes
each row at its own place. ``Decoder.run_rows`` runs a contiguous range of a cache's rows this way
(an ``OrtValue`` over a first-axis slice of a C-contiguous buffer shares its memory), which is how
one request's prompt is prefilled on its own slot while the others' caches stay untouched.

A graph whose sliding-window layers read ``sliding_attention_mask`` (Gemma: ``inference.kv_cache.SlidingWindow``,
from its metadata) keeps only each row's last positions in those layers' buffers; before each call
``KVCache.sliding_lengths`` makes room there and says how many each row holds, and the engine feeds
that mask right-padded to those lengths (plus the new positions), as it does ``attention_mask``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort

from inference import device_binding
from inference.call_stop import run_stoppable
from inference.kv_cache import KVCache, SlidingWindow
from inference.model_dir import CACHE_DTYPES, SLIDING_MASK, ModelShape
from inference.model_kernels import register_beside

log = logging.getLogger(__name__)

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"

# logits_to_keep's two usual values, made once (read-only: the binding only reads them)
_LOGITS_TO_KEEP = {keep: np.array(keep, dtype=np.int64) for keep in (0, 1)}
for _keep in _LOGITS_TO_KEEP.values():
    _keep.flags.writeable = False


def choose_providers(requested: Sequence[str]) -> list[str]:
    """The requested execution providers that this ONNX Runtime has, in order, always ending with CPU."""
    available = set(ort.get_available_providers())
    chosen = [p for p in requested if p in available and p != CPU]
    missing = [p for p in requested if p not in available]
    if missing:
        log.warning("execution providers %s are not available here (have %s); falling back", missing, sorted(available))
    if CUDA in chosen:
        device_binding.load_cuda_libraries()
    return [*chosen, CPU]


class Decoder:
    """One ONNX Runtime session over the exported decoder."""

    def __init__(
        self,
        model_path: Path,
        shape: ModelShape,
        providers: Sequence[str] = (CPU,),
        intra_op_threads: int = 2,
        spinning: bool = True,
    ) -> None:
        """``spinning``: whether the session's threads spin between calls (ONNX Runtime's default,
        quickest for a session that runs back to back); off for a session that takes turns with
        another on the same cores (a speculative run's draft model), whose spinning threads would
        otherwise hold the cores the other needs."""
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        if not spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        register_beside(options, Path(model_path))  # our kernel library, for a model built with it
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
        # the cache's element type as the graph takes it (float16 for the GPU build), and whether its
        # buffers are device memory with host mirrors (device_binding; settable on CPU for the tests)
        self.cache_dtype = CACHE_DTYPES[next(i.type for i in self.session.get_inputs() if i.name == self._past_names[0])]
        self.mirrored_cache = self._device != "cpu"
        self.sliding = SlidingWindow.of_session(self.session)
        log.info("decoder loaded from %s on %s with %d intra-op threads", model_path, self.provider, intra_op_threads)

    def new_state(self, batch_size: int = 1, use_cache: bool = True) -> DecodeState:
        return DecodeState(self, batch_size, use_cache)

    def empty_past(self, batch_size: int, capacity: int = KVCache.MIN_CAPACITY) -> KVCache:
        """An empty cache with room for ``capacity`` positions (it grows when needed)."""
        capacity = min(capacity, self.shape.context_window)
        return KVCache(self.shape, batch_size, capacity, self._device, self.sliding, self.cache_dtype, self.mirrored_cache)

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
        past.reserve(past_length + length, past_length)
        lengths = np.full(batch, past_length, dtype=np.int64)
        return self.run_rows(input_ids, past, lengths, 0, all_logits), past

    def run_rows(
        self,
        input_ids: np.ndarray,  # [R, S] int64
        past: KVCache,
        past_lengths: np.ndarray,  # [R] int64: the cached positions of each row
        first_row: int = 0,
        all_logits: bool = False,
    ) -> np.ndarray:
        """One forward pass over rows ``first_row .. first_row + R`` of ``past``, each after its own
        number of cached positions, appending each row's keys and values after its own past.

        The cache must already have room for the longest row (``KVCache.reserve``). Returns the last
        position's logits [R, V] (with ``all_logits``: [R, S, V])."""
        rows, length = input_ids.shape
        past_lengths = np.asarray(past_lengths, dtype=np.int64)
        totals = past_lengths + length  # [R]
        width = int(totals.max())
        if width > past.capacity or first_row + rows > past.batch_size:
            raise ValueError(f"rows {first_row}..{first_row + rows} up to {width} positions do not fit the cache")
        attention_mask = _right_padded(totals)  # [R, T]
        position_ids = past_lengths[:, None] + np.arange(length, dtype=np.int64)[None, :]  # [R, S]
        sliding = past.sliding_lengths(first_row, past_lengths, length)  # [R] or None; before views: it may grow them
        logits = self._forward(
            np.ascontiguousarray(input_ids, dtype=np.int64),
            attention_mask,
            position_ids,
            0 if all_logits else 1,
            past.views(first_row, first_row + rows),
            past,
            None if sliding is None else _right_padded(sliding + length),
        )  # [R, 1 or S, V]
        return logits if all_logits else logits[:, -1, :]

    def _forward(
        self,
        input_ids: np.ndarray,  # [R, S] int64
        attention_mask: np.ndarray,  # [R, T] int64
        position_ids: np.ndarray,  # [R, S] int64
        logits_to_keep: int,  # 0: every position
        cache: list[ort.OrtValue] | device_binding.CacheRows,  # each layer's buffer (rows), bound as past and present
        holder: KVCache,  # the cache they are (views of): it keeps the binding between runs
        sliding_mask: np.ndarray | None = None,  # [R, T'] int64: the sliding layers' own lengths, when it has them
    ) -> np.ndarray:
        """One session run; returns the logits [R, kept positions, V]. Keys and values are appended
        in place: the same buffer serves as past and present."""
        binding = self._binding(cache, holder)
        binding.bind_cpu_input("input_ids", input_ids)
        binding.bind_cpu_input("attention_mask", attention_mask)
        binding.bind_cpu_input("position_ids", position_ids)
        keep = _LOGITS_TO_KEEP.get(logits_to_keep)
        binding.bind_cpu_input("logits_to_keep", np.array(logits_to_keep, dtype=np.int64) if keep is None else keep)
        if sliding_mask is not None:
            binding.bind_cpu_input(SLIDING_MASK, sliding_mask)
        rows, length = input_ids.shape
        kept = min(logits_to_keep, length) if logits_to_keep else length
        logits = np.empty((rows, kept, self.shape.vocab_size), dtype=np.float32)  # [R, kept, V], a new array each run
        binding.bind_output("logits", "cpu", 0, np.float32, list(logits.shape), logits.ctypes.data)
        run_stoppable(self.session, binding)  # a cancel may stop it mid-way (``Terminated``)
        return logits

    def _binding(self, cache: list[ort.OrtValue] | device_binding.CacheRows, holder: KVCache) -> ort.IOBinding:
        """An IOBinding with ``cache`` bound as past and present: the one ``holder`` kept from its last
        run while those are the same OrtValues (every decode step of a run, until the cache grows), so
        the 2 × layers cache bindings are made once per cache, not once per token. The binding lives
        with the cache: a cache serves one run at a time, and no binding outlives its buffers."""
        kept = holder.binding
        # list == compares item by item by identity first (OrtValues define no other equality): one C loop
        if kept is not None and kept[0] is self.session and kept[1] == cache:
            return kept[2]
        binding = self.session.io_binding()
        if isinstance(cache, device_binding.CacheRows):  # rows of device buffers, by address
            cache.bind(binding, self._past_names, self._present_names)
            holder.binding = (self.session, cache, binding)
            return binding
        for past_name, present_name, value in zip(self._past_names, self._present_names, cache):
            binding.bind_ortvalue_input(past_name, value)
            binding.bind_ortvalue_output(present_name, value)
        holder.binding = (self.session, list(cache), binding)
        return binding

    def prefill_fresh_rows(
        self, prompts: Sequence[Sequence[int]], into: KVCache, targets: Sequence[int], all_logits: bool = False
    ) -> np.ndarray:
        """Several prompts from an empty cache in **one** forward pass; returns each one's
        last-position logits [G, V], equal to its prefill alone (a prompt of 2 or more tokens);
        with ``all_logits``, every position's [G, S, V] (S the longest prompt; a row's positions
        past its own length are padding's).

        The prompts are right-padded to the longest; each row's attention mask stops at its own
        length, which the fused attention's first-prompt path honours row by row. The pass runs on
        a scratch cache of G rows, whose first ``len(prompt)`` positions then go to rows
        ``targets`` of ``into`` (which must have room: ``KVCache.reserve``). The head computes the
        last ``longest - shortest + 1`` positions of every row, where each row's own last one lies."""
        lengths = np.array([len(prompt) for prompt in prompts], dtype=np.int64)  # [G]
        if len(prompts) == 0 or int(lengths.min()) < 1:
            raise ValueError("prefill_fresh_rows needs at least one prompt, none of them empty")
        width = int(lengths.max())
        keep = width if all_logits else width - int(lengths.min()) + 1  # positions of every row the head computes
        input_ids = np.zeros((len(prompts), width), dtype=np.int64)  # [G, S]; the padding is never attended to
        for row, prompt in enumerate(prompts):
            input_ids[row, : len(prompt)] = prompt
        attention_mask = (np.arange(width, dtype=np.int64)[None, :] < lengths[:, None]).astype(np.int64)  # [G, S]
        position_ids = np.broadcast_to(np.arange(width, dtype=np.int64), input_ids.shape).copy()  # [G, S]
        scratch = self.empty_past(len(prompts), capacity=max(width, KVCache.MIN_CAPACITY))
        fresh = scratch.sliding_lengths(0, np.zeros(len(prompts), dtype=np.int64), width)  # zeros, or None
        # [G, keep, V]: positions width - keep .. width - 1 of every row
        sliding_mask = None if fresh is None else attention_mask  # nothing before: the same lengths
        logits = self._forward(input_ids, attention_mask, position_ids, keep, scratch.values, scratch, sliding_mask)
        into.take_rows(scratch, targets, lengths.tolist())
        if all_logits:
            return logits
        return logits[np.arange(len(prompts)), lengths - 1 - (width - keep)]  # [G, V]


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

    @property
    def past(self) -> KVCache:
        """The cache (replaced when it grows or a deep rewind feeds the ids again)."""
        return self._past

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
        ids = np.concatenate([self.ids, block], axis=1)  # kept once the call succeeds (one stopped feeds nothing)
        if self.use_cache:
            logits, self._past = self.decoder.run(block, self._past, self.length, all_logits)
        else:
            logits, _ = self.decoder.run(ids, self.decoder.empty_past(self.batch_size, ids.shape[1]), 0, all_logits)
            if all_logits:
                logits = logits[:, -block.shape[1] :]
        self.ids = ids
        return logits

    def truncate(self, length: int) -> None:
        """Forgets every position after the first ``length``: speculative decoding's rollback past
        rejected drafts. The cache keeps its buffers; the next call writes over what lay beyond.
        A rewind deeper than the sliding layers' buffers keep (a shift dropped positions the window
        at ``length`` reads) feeds the first ``length`` ids again into a fresh cache."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot truncate {self.length} positions to {length}")
        self.ids = self.ids[:, :length]
        if self.use_cache and not self._past.holds(length):
            self._past = self.decoder.empty_past(self.batch_size, length)
            if length:
                self.decoder.run(self.ids, self._past, 0)

    def reorder(self, rows: Sequence[int]) -> None:
        """Keeps the given rows (with repeats) as the new batch: beam search's cache shuffle."""
        index = np.asarray(rows, dtype=np.int64)
        self.ids = self.ids[index]
        self.batch_size = len(index)
        if self.use_cache:
            self._past.reorder(index, self.length)
        else:
            self._past = self.decoder.empty_past(self.batch_size)


def _right_padded(lengths: np.ndarray) -> np.ndarray:
    """An attention mask [R, max(lengths)] int64: row ``r`` has ones for its first ``lengths[r]`` positions."""
    if len(lengths) == 1:  # one row (every step of a single run): all ones
        return np.ones((1, int(lengths[0])), dtype=np.int64)
    return (np.arange(int(lengths.max()), dtype=np.int64)[None, :] < lengths[:, None]).astype(np.int64)
