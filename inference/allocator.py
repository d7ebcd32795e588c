"""Keep freed heap memory in the process instead of handing it back to the system after every step.

Each token a run samples allocates and frees a few float64 arrays of the vocabulary's size (400 KB
at 49,152 tokens: the logits in float64, ``exp``, probabilities, masks). glibc's ``malloc`` serves
such sizes from the heap once its dynamic mmap threshold has risen past them, but it also trims the
top of the heap back to the system whenever more than twice that threshold lies free there, so the
next step touches fresh pages again: about 190 page faults per sampled token, which on the shared
2-core machine made the default chain cost 1.2–1.9 ms instead of 0.6–0.7 ms
(``python -m inference.sampling.bench``; docs/sampling.md has the figures).

``keep_freed_memory`` raises both thresholds once per process: allocations below 64 MB come from
the heap and up to 256 MB of freed heap stays mapped for the next step. Larger buffers (a long
prompt's every-position logits, the KV cache) are still mapped and unmapped on their own. On a C
library without glibc's ``mallopt`` it does nothing.

``release_freed_memory`` hands every free page back once (glibc's ``malloc_trim``): a model's load
frees far more than a step does (ONNX Runtime's copies while it builds a session), and kept, that
would stay resident for the process's life: measured loading Gemma 3 270M, +671 MB -> +279 MB.
"""

from __future__ import annotations

import ctypes
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 64 << 20  # allocations below this come from the heap
TRIM_THRESHOLD_BYTES = 256 << 20  # free memory at the heap's top kept before trimming

_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Sets the thresholds (once per process); returns whether the C library took them."""
    global _applied
    if _applied is None:
        _applied = _set_thresholds()
        log.debug("malloc thresholds %s", "raised" if _applied else "left as they are (no glibc mallopt)")
    return _applied


def _set_thresholds() -> bool:
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success; musl's stub returns 0 and changes nothing
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1


def release_freed_memory() -> bool:
    """Returns the heap's free pages to the system now (after a model's load); whether the C library
    could (glibc's ``malloc_trim``)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = (ctypes.c_size_t,)
    trim.restype = ctypes.c_int
    trim(0)
    return True
