"""The decoder's KV cache: one buffer per layer and kind, grown by reallocation, and the sliding
window that bounds the buffers of a model's sliding-window layers.

``KVCache`` holds one buffer per layer and kind, ``[B, kv_heads, capacity, head_dim]``, in
``past_key_values.*`` order; the engine (``inference.engine.Decoder``) binds each as both its
layer's past and present, so the graph appends a step's keys and values in place. The cache
starts at ``MIN_CAPACITY`` positions; when a sequence outgrows the capacity the buffers are
reallocated at twice the size (capped at the context window, ``reserve``), the only copy of the
cache. Rows are moved between slots (``copy_rows``, ``take_rows``) and reordered for beam search
(``reorder``) here too. A cache on a device keeps its buffers in device memory and edits them
through host mirrors (``inference.device_binding``).

A graph whose sliding-window layers read ``sliding_attention_mask`` (Gemma: ``SlidingWindow``, from
its metadata) gets buffers of ``window + slack`` positions on those layers, per row the last
positions only (``KVCache.sliding_lengths`` shifts a row that would overflow, and returns the
positions each row holds there, from which the engine builds that mask); the global layers'
buffers hold every position as above.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort

from inference import device_binding
from inference.model_dir import SLIDING_LAYERS_KEY, SLIDING_MASK, SLIDING_WINDOW_KEY, ModelShape


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
