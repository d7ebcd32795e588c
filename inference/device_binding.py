"""The KV cache on a device (the CUDA provider): bound in place by address, edited through the host.

On the CPU provider a cache buffer is a numpy array and its ``OrtValue`` shares its memory, so a
slice of rows is a numpy view wrapped again, and rows are copied with numpy. On a device the
buffers live in device memory (``OrtValue.ortvalue_from_numpy(…, "cuda", 0)``) and stay there
between steps; the host keeps a *mirror* array of each, which is not kept up to date. Two things
differ, and both live here so that the engine and its cache (``inference.kv_cache``) keep one code path:

- :class:`CacheRows`: rows ``begin..end`` of every buffer, bound to an ``IOBinding`` as past and
  present by address (the buffer's address plus ``begin`` rows), the same device memory, no copy.
  A batch that decodes a contiguous range of slots (``Decoder.run_rows``) runs this way.
- :func:`host_edit`: the rare edits that move cache rows around (a prompt's rows placed into its
  slot, beam reorders, a sliding window's shift) download the buffers into their mirrors, let the
  caller edit the mirrors with numpy, and upload them in place (``OrtValue.update_inplace``: the
  device buffers, and so every binding over them, stay the same).

Both work unchanged over CPU ``OrtValue``\\ s that do not share memory with their mirrors, which is
how the tests run them without a GPU (``KVCache(..., mirrored=True)``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort


@dataclass(frozen=True, eq=False)
class CacheRows:
    """Rows ``begin .. end`` of each cache buffer (``values``: ``[B, kv_heads, C, head_dim]`` each, C-contiguous)."""

    values: tuple[ort.OrtValue, ...]
    begin: int
    end: int

    def __eq__(self, other: object) -> bool:  # the same buffers (by identity) and rows: the same binding
        return (
            isinstance(other, CacheRows)
            and (self.begin, self.end) == (other.begin, other.end)
            and len(self.values) == len(other.values)
            and all(a is b for a, b in zip(self.values, other.values))
        )

    __hash__ = None  # type: ignore[assignment]

    def bind(self, binding: ort.IOBinding, past_names: Sequence[str], present_names: Sequence[str]) -> None:
        """Binds each buffer's rows as its layer's past input and present output, by address."""
        for past_name, present_name, value in zip(past_names, present_names, self.values):
            shape = value.shape()  # [B, kv_heads, C, head_dim]
            dtype = np.dtype(_NUMPY_TYPES[value.data_type()])
            row_bytes = int(np.prod(shape[1:])) * dtype.itemsize
            address = value.data_ptr() + self.begin * row_bytes
            rows = [self.end - self.begin, *shape[1:]]
            device, device_id = value.device_name(), 0
            binding.bind_input(past_name, device, device_id, dtype, rows, address)
            binding.bind_output(present_name, device, device_id, dtype, rows, address)


# OrtValue.data_type() names → numpy dtypes (the cache's element types: model_dir.CACHE_DTYPES)
_NUMPY_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16"}


@contextlib.contextmanager
def host_edit(mirrors: Sequence[np.ndarray], values: Sequence[ort.OrtValue], indices: Sequence[int]) -> Iterator[None]:
    """Buffers ``indices`` downloaded into their host ``mirrors`` for the block to edit, then
    uploaded into the same device memory (their bindings stay valid)."""
    for i in indices:
        mirrors[i][...] = values[i].numpy()
    yield
    for i in indices:
        values[i].update_inplace(mirrors[i])


def load_cuda_libraries() -> None:
    """Loads NVIDIA's CUDA and cuDNN runtime wheels (the ``cuda`` extra) before a CUDA session is
    made: ``onnxruntime.preload_dlls`` (the CUDA build of ONNX Runtime; absent from the CPU one)."""
    preload = getattr(ort, "preload_dlls", None)
    if preload is not None:
        preload()
