"""GGUF's quantized weights, read as they are and re-laid out for ONNX Runtime's ``MatMulNBits``.

Two llama.cpp block formats occur in the packaged GGUF, both in blocks of 32 consecutive weights
along a row (the input dimension K; a GGUF matrix ``[ne0=K, ne1=N]`` is stored as N rows of K):

- **Q4_1**, 20 bytes a block: ``d`` (fp16), ``m`` (fp16), then 16 bytes ``qs`` where byte ``j``
  holds ``q[j]`` in its low nibble and ``q[j + 16]`` in its high nibble; ``w = d * q + m``,
  ``q`` in 0..15.
- **Q8_0**, 34 bytes a block: ``d`` (fp16), then 32 signed bytes ``q``; ``w = d * q``.

``MatMulNBits`` wants ``B`` as ``[N, K / 32, 32 * bits / 8]`` with, for 4 bits, element ``2i`` of a
block in the low nibble of byte ``i`` and element ``2i + 1`` in its high nibble, and computes
``w = (q - zero_point) * scale`` (default zero point ``2 ** (bits - 1)``).

Everything here is numpy only; the ``gguf`` package is imported just to read the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

BLOCK = 32  # weights per block, Q4_1 and Q8_0 alike
Q4_1_BYTES = 20
Q8_0_BYTES = 34


@dataclass(frozen=True)
class GgufMatrix:
    """One weight matrix of the GGUF, its blocks untouched: ``raw`` is ``[N, K / 32 * bytes per block]``."""

    name: str
    kind: str  # "Q4_1", "Q8_0", "F32", …
    rows: int  # N, output features
    cols: int  # K, input features
    raw: np.ndarray


def read_matrices(path: Path) -> dict[str, GgufMatrix]:
    """Every 2-D tensor of the GGUF at ``path`` by name, with its raw block bytes (memory-mapped)."""
    from gguf import GGUFReader  # the build extra: imported by a build only

    matrices = {}
    for t in GGUFReader(path).tensors:
        if len(t.shape) == 2:
            cols, rows = (int(n) for n in t.shape)  # GGUF lists ne0 (contiguous) first
            matrices[t.name] = GgufMatrix(t.name, t.tensor_type.name, rows, cols, np.asarray(t.data))
    return matrices


def split_q4_1(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q4_1 rows ``[N, nb * 20]`` uint8 → ``d``, ``m`` ``[N, nb]`` float32 and ``q`` ``[N, nb * 32]`` uint8."""
    rows = raw.shape[0]
    blocks = raw.reshape(rows, -1, Q4_1_BYTES)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
    qs = blocks[..., 4:]  # [N, nb, 16]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # [N, nb, 32]: q[0..15] low nibbles, q[16..31] high
    return d, m, q.reshape(rows, -1)


def split_q8_0(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q8_0 rows ``[N, nb * 34]`` uint8 → ``d`` ``[N, nb]`` float32 and ``q`` ``[N, nb * 32]`` int8."""
    rows = raw.shape[0]
    blocks = raw.reshape(rows, -1, Q8_0_BYTES)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    q = blocks[..., 2:].copy().view(np.int8)
    return d, q.reshape(rows, -1)


def pack_4bit(q: np.ndarray) -> np.ndarray:
    """``q`` ``[N, K]`` with values 0..15 → ``MatMulNBits``' ``B`` ``[N, K / 32, 16]`` (pairs, low nibble first)."""
    rows = q.shape[0]
    pairs = q.reshape(rows, -1, BLOCK // 2, 2)
    return (pairs[..., 0] | (pairs[..., 1] << 4)).astype(np.uint8)


def pack_8bit(q: np.ndarray) -> np.ndarray:
    """Signed ``q`` ``[N, K]`` → ``MatMulNBits``' 8-bit ``B`` ``[N, K / 32, 32]``: ``q + 128``, for the default zero point 128."""
    rows = q.shape[0]
    return (q.astype(np.int16) + 128).astype(np.uint8).reshape(rows, -1, BLOCK)


def dequantize_q4_1(d: np.ndarray, m: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``w = d * q + m`` as float32 ``[N, K]``, in the order of operations transformers' GGUF loader uses."""
    rows = q.shape[0]
    w = d[..., None] * q.reshape(rows, -1, BLOCK).astype(np.float32) + m[..., None]
    return w.reshape(rows, -1)


def dequantize_q8_0(d: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``w = q * d`` as float32 ``[N, K]``."""
    rows = q.shape[0]
    return (q.reshape(rows, -1, BLOCK).astype(np.float32) * d[..., None]).reshape(rows, -1)


def unpermute_rows(rows: int, heads: int) -> np.ndarray:
    """Row order that undoes llama.cpp's rotary permutation of ``attn_q``/``attn_k`` (``heads``: of that tensor).

    llama.cpp's converter interleaves the two rotary halves of each head's rows; transformers'
    GGUF loader puts them back (``reshape(heads, half, 2, K).swapaxes(1, 2)``). The transformers
    weight's row ``r`` is GGUF row ``order[r]``.
    """
    half = rows // heads // 2
    return np.arange(rows).reshape(heads, half, 2).swapaxes(1, 2).reshape(-1)
