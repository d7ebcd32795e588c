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

Rows of one call may have different lengths (continuous batching, ``inference.batching.scheduler``): the
attention mask is right-padded (row ``b``: ones for its own total length, zeros after it) and
``position_ids`` counts from each row's own past length, so GroupQueryAttention reads and writes
each row at its own place. ``Decoder.run_rows`` runs a contiguous range of a cache's rows this way
(an ``OrtValue`` over a first-axis slice of a C-contiguous buffer shares its memory), which is how
one request's prompt is prefilled on its own slot while the others' caches stay untouched.

A graph whose sliding-window layers read ``sliding_attention_mask`` (Gemma: ``SlidingWindow``, from
its metadata) gets buffers of ``window + slack`` positions on those layers, per row the last
positions only (``KVCache.sliding_lengths`` shifts a row that would overflow), and that mask,
right-padded to each row's positions there; the global layers' buffers hold every position as above.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from inference import device_binding
from inference.call_stop import run_stoppable
from inference.model_dir import CACHE_DTYPES, SLIDING_LAYERS_KEY, SLIDING_MASK, SLIDING_WINDOW_KEY
from inference.model_kernels import register_beside

log = logging.getLogger(__name__)

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"

# logits_to_keep's two usual values, made once (read-only: the binding only reads them)
_LOGITS_TO_KEEP = {keep: np.array(keep, dtype=np.int64) for keep in (0, 1)}
for _keep in _LOGITS_TO_KEEP.values():
    _keep.flags.writeable = False


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
    if CUDA in chosen:
        device_binding.load_cuda_libraries()
    return [*chosen, CPU]


@dataclass(frozen=True)
class SlidingWindow:
    """The layers whose attention sees a sliding window, and how their cache buffers are sized.

    A sliding layer's query attends to the ``window`` positions ending at its own, so before a
    position ``p`` is fed its buffers need only positions ``p - window + 1 .. p - 1``. They hold
    ``capacity`` positions; when a step would not fit, a row's buffers are shifted to keep their
    last ``keep`` positions (``window - 1`` and a margin that a short rewind can fall back on).
    Keys are rotated (from ``position_ids``) before they are cached, so a shift moves them as they are.
    """

    layers: frozenset[int]
    window: int
    capacity: int
    keep: int

    def __post_init__(self) -> None:
        if not self.window - 1 <= self.keep < self.capacity:
            raise ValueError(f"sliding window {self.window}: keep {self.keep} must lie in [window - 1, capacity {self.capacity})")

    @classmethod
    def sized(cls, layers: Sequence[int], window: int, slack: int | None = None) -> SlidingWindow:
        """Buffers of ``window + slack`` positions (slack: half a window, at least 8 by default)
        that keep ``window - 1 + slack // 4`` after a shift: one shift every ``3/4 slack + 1`` steps."""
        slack = max(window // 2, 8) if slack is None else slack
        return cls(frozenset(layers), window, window + slack, window - 1 + slack // 4)

    @classmethod
    def of_session(cls, session: ort.InferenceSession) -> SlidingWindow | None:
        """What ``inference.modelbuild.gemma_attention`` records in the graph (``metadata_props``
        ``sliding_window``, ``sliding_layers``) when its sliding layers read ``sliding_attention_mask``."""
        if SLIDING_MASK not in {i.name for i in session.get_inputs()}:
            return None
        meta = session.get_modelmeta().custom_metadata_map
        if SLIDING_WINDOW_KEY not in meta or SLIDING_LAYERS_KEY not in meta:
            raise ValueError(
                f"the graph takes {SLIDING_MASK} but its metadata has no {SLIDING_WINDOW_KEY} / {SLIDING_LAYERS_KEY}"
            )
        return cls.sized([int(i) for i in meta[SLIDING_LAYERS_KEY].split(",")], int(meta[SLIDING_WINDOW_KEY]))


class KVCache:
    """The key and value buffers of every layer, ``[B, kv_heads, capacity, head_dim]`` float32 each,
    in ``past_key_values.*`` order; the first ``length`` positions of every row hold the cache.

    With a ``SlidingWindow``, the sliding layers' buffers are ``[B, kv_heads, sliding capacity,
    head_dim]`` and index ``j`` of row ``b`` holds position ``offsets[b] + j``: row ``b`` of length
    ``L`` has ``L - offsets[b]`` positions there (``sliding_lengths``), of which the last
    ``window - 1`` are all the next query reads. Lengths stay the callers' (the cache's rows do not
    know theirs): a row is rolled back by feeding it from a shorter length, as long as that length
    still finds its window (``holds``)."""

    MIN_CAPACITY = 256

    def __init__(
        self,
        shape: ModelShape,
        batch_size: int,
        capacity: int,
        device: str,
        sliding: SlidingWindow | None = None,
        dtype: str = "float32",
        mirrored: bool | None = None,
    ) -> None:
        """``dtype``: the graph's cache type (float16 for the GPU build); ``mirrored`` (default: on a
        device): the buffers live in their OrtValues, the numpy arrays being host mirrors edited
        through ``device_binding`` (on the CPU too, for the tests)."""
        self.shape = shape
        self.device = device
        self.sliding = sliding
        self.dtype = np.dtype(dtype)
        self.mirrored = device != "cpu" if mirrored is None else mirrored
        self._is_sliding = [sliding is not None and i // 2 in sliding.layers for i in range(2 * shape.num_layers)]
        sliding_capacity = 0 if sliding is None else sliding.capacity
        self.buffers = [
            self._zeros(batch_size, sliding_capacity if s else capacity) for s in self._is_sliding
        ]  # [B, kv_heads, C, head_dim] each
        self.values = [self._wrap(buffer) for buffer in self.buffers]
        self.offsets = np.zeros(batch_size, dtype=np.int64)  # [B]: the position at index 0 of each row's sliding buffers
        # a session's IOBinding with some of these values bound as past and present, kept between
        # runs by ``Decoder._binding``: (session, the values bound, the binding)
        self.binding: tuple[ort.InferenceSession, list[ort.OrtValue] | device_binding.CacheRows, ort.IOBinding] | None = None
        self._views: tuple[tuple[int, int], list[ort.OrtValue]] | None = None  # the last rows asked of ``views``

    @property
    def batch_size(self) -> int:
        return int(self.buffers[0].shape[0])

    @property
    def capacity(self) -> int:
        """Positions the global layers' buffers hold (every layer's, without sliding ones)."""
        return int(self.buffers[self._first(False)].shape[2])

    @property
    def sliding_capacity(self) -> int:
        """Positions the sliding layers' buffers hold (0 without sliding layers)."""
        return 0 if self.sliding is None else int(self.buffers[self._first(True)].shape[2])

    @property
    def nbytes(self) -> int:
        return sum(int(buffer.nbytes) for buffer in self.buffers)

    def _first(self, sliding: bool) -> int:
        return next((i for i, s in enumerate(self._is_sliding) if s == sliding), 0)

    def _zeros(self, batch_size: int, capacity: int) -> np.ndarray:
        return np.zeros((batch_size, self.shape.kv_heads, capacity, self.shape.head_dim), dtype=self.dtype)

    def _wrap(self, buffer: np.ndarray) -> ort.OrtValue:
        # On CPU the OrtValue shares the numpy buffer's memory: ONNX Runtime writes into it in place.
        # Mirrored (a device), the OrtValue holds its own copy and the numpy buffer is a host mirror.
        own = buffer.copy() if self.mirrored and self.device == "cpu" else buffer
        return ort.OrtValue.ortvalue_from_numpy(own, self.device, 0)

    def _host(self, index: int) -> np.ndarray:
        return self.values[index].numpy() if self.mirrored else self.buffers[index]

    def _edit(self, sliding_only: bool = False) -> contextlib.AbstractContextManager:
        """Around numpy edits of ``buffers``: on a mirrored cache they are downloaded first and
        uploaded in place after (``device_binding.host_edit``); nothing to do on the CPU."""
        if not self.mirrored:
            return contextlib.nullcontext()
        indices = [i for i, s in enumerate(self._is_sliding) if s or not sliding_only]
        return device_binding.host_edit(self.buffers, self.values, indices)

    def views(self, begin: int, end: int) -> list[ort.OrtValue] | device_binding.CacheRows:
        """OrtValues over rows ``begin..end`` of every buffer, sharing their memory (on a mirrored
        cache: those rows of the device buffers, bound by address, ``device_binding.CacheRows``)."""
        if begin == 0 and end == self.batch_size:
            return self.values
        if self.mirrored:
            return device_binding.CacheRows(tuple(self.values), begin, end)
        if self._views is None or self._views[0] != (begin, end):  # kept: a batch decodes the same rows step after step
            self._views = ((begin, end), [self._wrap(buffer[begin:end]) for buffer in self.buffers])
        return self._views[1]

    def holds(self, length: int) -> bool:
        """Whether every row fed from ``length`` cached positions finds each position its window reads
        (always without sliding layers; not once a shift dropped one that a rewind to ``length`` needs)."""
        if self.sliding is None or length == 0:
            return True
        return bool((self.offsets <= max(0, length - self.sliding.window + 1)).all())

    def sliding_lengths(self, first_row: int, past_lengths: np.ndarray, length: int) -> np.ndarray | None:
        """Makes room in the sliding buffers of rows ``first_row ..`` (of ``past_lengths`` [R] cached
        positions each) for ``length`` more, and returns the positions each holds there [R] (None
        without sliding layers). A row that would overflow is shifted to its last ``keep`` positions
        (fewer for a long step, down to ``window - 1``); the buffers grow only for a step longer than
        what a shifted row leaves (a prompt's chunk of more than ``capacity - window + 1`` tokens), and
        go back to their size once a step over every row fits it. Call before ``views``: buffers may be replaced."""
        if self.sliding is None:
            return None
        past_lengths = np.asarray(past_lengths, dtype=np.int64)  # [R]
        rows = np.arange(first_row, first_row + len(past_lengths))
        self.offsets[rows[past_lengths == 0]] = 0  # a fresh row (a slot taken anew)
        needed_from = np.maximum(past_lengths - self.sliding.window + 1, 0)  # [R]: the first position the next query reads
        if (self.offsets[rows] > needed_from).any():
            raise ValueError(
                f"rows {first_row}..{first_row + len(rows)} at lengths {past_lengths.tolist()}: their sliding-window cache "
                f"starts at positions {self.offsets[rows].tolist()} (rewound past what a shift dropped: feed them again)"
            )
        held = past_lengths - self.offsets[rows]  # [R]
        capacity = self.sliding_capacity
        # a long step (a prompt's chunk) keeps less of the margin, down to the window, before the buffers grow
        keep = max(self.sliding.window - 1, min(self.sliding.keep, capacity - length))
        over = held + length > capacity
        if over.any():
            with self._edit(sliding_only=True):
                for row, n in zip(rows[over], held[over]):
                    kept = min(int(n), keep)
                    self._shift(int(row), int(n) - kept, kept)
        held = past_lengths - self.offsets[rows]
        needed = int(held.max()) + length
        whole = first_row == 0 and len(rows) == self.batch_size
        if needed > capacity or (whole and capacity > self.sliding.capacity >= needed):
            self._replace_sliding(max(needed, self.sliding.capacity))
        return held

    def _shift(self, row: int, start: int, count: int) -> None:
        """Row ``row``'s sliding positions at indices ``start .. start + count`` move to the front."""
        for buffer, sliding in zip(self.buffers, self._is_sliding):
            if sliding:
                buffer[row, :, :count] = buffer[row, :, start : start + count].copy()
        self.offsets[row] += start

    def copy_rows(self, targets: Sequence[int], sources: Sequence[int], length: int) -> None:
        """Rows ``targets`` get the first ``length`` positions of rows ``sources`` (read before any is written),
        each source being ``length`` long (the sliding buffers' rows are copied with their offsets)."""
        target, source = np.asarray(targets, dtype=np.int64), np.asarray(sources, dtype=np.int64)
        if len(source) == 0:
            return
        sliding_length = min(self.sliding_capacity, max(0, length - int(self.offsets[source].min())))  # the most any holds
        with self._edit():
            for buffer, sliding in zip(self.buffers, self._is_sliding):
                n = sliding_length if sliding else length
                buffer[target, :, :n] = buffer[source, :, :n]  # the right side is a copy: no aliasing
        self.offsets[target] = self.offsets[source]

    def take_rows(self, source: KVCache, targets: Sequence[int], lengths: Sequence[int]) -> None:
        """Row ``targets[i]`` gets the first ``lengths[i]`` positions of ``source``'s row ``i`` (the last
        ``keep`` of them in the sliding buffers when they hold fewer)."""
        spans = []  # per row with sliding layers: (first index in source's sliding buffers, count, the target's offset)
        for row, length in enumerate(lengths if self.sliding is not None else ()):
            held = length - int(source.offsets[row])
            kept = held if held <= self.sliding_capacity else self.sliding.keep
            spans.append((held - kept, kept, length - kept))
        with self._edit():
            for i, (buffer, sliding) in enumerate(zip(self.buffers, self._is_sliding)):
                other = source._host(i)  # [G, kv_heads, C', head_dim]
                for row, (target, length) in enumerate(zip(targets, lengths)):
                    if sliding:
                        start, kept, _ = spans[row]
                        buffer[target, :, :kept] = other[row, :, start : start + kept]
                    else:
                        buffer[target, :, :length] = other[row, :, :length]
        for target, (_, _, offset) in zip(targets, spans):
            self.offsets[target] = offset

    def reserve(self, needed: int, length: int) -> None:
        """Room for ``needed`` positions, keeping the first ``length``: grows to max(needed, 2 × capacity)
        (the global layers' buffers; the sliding ones make room in ``sliding_lengths``)."""
        if needed <= self.capacity:
            return
        capacity = min(max(needed, 2 * self.capacity, self.MIN_CAPACITY), self.shape.context_window)
        self._replace(slice(None), length, capacity)

    def reorder(self, index: np.ndarray, length: int) -> None:
        """Rows ``index`` (repeats allowed) become the batch, each with its cache (in place when the
        batch keeps its size and the buffers live in host memory: only the first ``length`` positions move)."""
        if len(index) == self.batch_size and not self.mirrored:
            self.copy_rows(range(self.batch_size), index, length)
            return
        self._replace(index, length, self.capacity)
        self.offsets = self.offsets[index]

    def _replace(self, rows: np.ndarray | slice, length: int, capacity: int) -> None:
        """New buffers holding rows ``rows`` of the old ones: the global layers' first ``length``
        positions in ``capacity``; the sliding layers' all they hold, in buffers of the same size."""
        sliding_capacity = self.sliding_capacity
        for i, sliding in enumerate(self._is_sliding):
            part = self._host(i)[rows] if sliding else self._host(i)[rows, :, :length]  # [B', kv_heads, kept, head_dim]
            self._put(i, part, sliding_capacity if sliding else capacity)

    def _replace_sliding(self, capacity: int) -> None:
        """The sliding buffers at ``capacity`` positions, keeping what each row holds (up to that)."""
        for i, sliding in enumerate(self._is_sliding):
            if sliding:
                self._put(i, self._host(i)[:, :, :capacity], capacity)

    def _put(self, index: int, part: np.ndarray, capacity: int) -> None:
        self.binding = self._views = None  # they hold the old buffers
        buffer = self._zeros(part.shape[0], capacity)
        buffer[:, :, : part.shape[2]] = part  # [B', kv_heads, kept, head_dim]
        self.buffers[index], self.values[index] = buffer, self._wrap(buffer)


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
