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


# The k-quant and 5-bit formats of Gemma's GGUF (llama.cpp's ggml-common.h; numpy's order of
# operations as gguf-py's ``dequantize``, which transformers' GGUF loader uses, so the fp32 values
# agree bit for bit):
#
# - **Q5_0**, 22 bytes per 32: ``d`` (fp16), ``qh`` (32 high bits), ``qs`` (16 bytes, nibbles as
#   Q4_1); ``w = d * (q - 16)``, ``q`` in 0..31.
# - **Q4_K**, 144 bytes per 256: ``d``, ``dmin`` (fp16), 12 bytes of eight 6-bit scales ``sc`` and
#   mins ``mn``, 128 bytes of nibbles (each 32 bytes: sub-block 2j low, 2j + 1 high);
#   ``w = (d * sc) * q - (dmin * mn)`` per sub-block of 32, ``q`` in 0..15: a scale and a minimum
#   per block of 32, as Q4_1.
# - **Q6_K**, 210 bytes per 256: ``ql`` (128), ``qh`` (64), sixteen int8 ``scales``, ``d`` (fp16);
#   ``w = (d * scale) * (q - 32)`` per sub-block of 16, ``q`` in 0..63.
Q5_0_BYTES = 22
Q4_K_BYTES = 144
Q6_K_BYTES = 210
SUPER = 256  # weights per k-quant super-block


# Bytes per block and weights per block of each format, as stored in the GGUF.
BLOCK_BYTES: dict[str, tuple[int, int]] = {
    "Q4_1": (Q4_1_BYTES, BLOCK),
    "Q8_0": (Q8_0_BYTES, BLOCK),
    "Q5_0": (Q5_0_BYTES, BLOCK),
    "Q4_K": (Q4_K_BYTES, SUPER),
    "Q6_K": (Q6_K_BYTES, SUPER),
}


def row_bytes(kind: str, k: int) -> int:
    """The bytes a GGUF row of ``k`` weights of type ``kind`` takes; ``ValueError`` for another type or a
    ``k`` that is not a whole number of its blocks."""
    if kind not in BLOCK_BYTES:
        raise ValueError(f"no block layout known for GGUF type {kind}")
    size, per_block = BLOCK_BYTES[kind]
    if k % per_block:
        raise ValueError(f"{kind} rows hold whole blocks of {per_block} weights; {k} is not a multiple")
    return k // per_block * size


@dataclass(frozen=True)
class Blocks:
    """A GGUF matrix as ``MatMulNBits`` takes it: ``w = scales * (codes - 2 ** (bits - 1)) + offsets``.

    ``codes`` ``[N, K]`` uint8 (the zero point is MatMulNBits' default), ``scales`` and ``offsets``
    ``[N, K / block]`` float32 (``offsets`` None: none), ``dequantized`` ``[N, K]`` the fp32 weights
    exactly as gguf-py computes them (for the check against the export).
    """

    bits: int
    block: int
    codes: np.ndarray
    scales: np.ndarray
    offsets: np.ndarray | None
    dequantized: np.ndarray

    def rows(self, order: np.ndarray) -> Blocks:
        """The same blocks with the rows in ``order``."""
        offsets = None if self.offsets is None else self.offsets[order]
        return Blocks(self.bits, self.block, self.codes[order], self.scales[order], offsets, self.dequantized[order])


def blocks_of(matrix: GgufMatrix) -> Blocks:
    """The blocks of a Q4_1, Q8_0, Q5_0, Q4_K or Q6_K matrix; ``ValueError`` for other types."""
    raw, rows = matrix.raw, matrix.rows
    if matrix.kind == "Q8_0":
        d, q = split_q8_0(raw)
        return Blocks(8, BLOCK, pack_codes_8bit(q), d, None, dequantize_q8_0(d, q))
    if matrix.kind == "Q4_1":
        d, m, q = split_q4_1(raw)
        return Blocks(4, BLOCK, q, d, m + np.float32(8) * d, dequantize_q4_1(d, m, q))
    if matrix.kind == "Q5_0":
        blocks = raw.reshape(rows, -1, Q5_0_BYTES)
        d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)  # [N, nb]
        qh = blocks[..., 2:6].copy().view(np.uint32)  # [N, nb, 1]
        high = ((qh >> np.arange(32, dtype=np.uint32)) & np.uint32(1)).astype(np.uint8)  # [N, nb, 32]
        qs = blocks[..., 6:]
        low = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # [N, nb, 32]
        q = ((low | (high << np.uint8(4))).astype(np.int8) - np.int8(16)).reshape(rows, -1)  # -16..15
        w = (d[..., None] * q.reshape(rows, -1, BLOCK).astype(np.float32)).reshape(rows, -1)
        return Blocks(8, BLOCK, pack_codes_8bit(q), d, None, w)
    if matrix.kind == "Q4_K":
        blocks = raw.reshape(rows, -1, Q4_K_BYTES)
        d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)[..., None]  # [N, ns, 1]
        dmin = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)[..., None]
        packed = blocks[..., 4:16].reshape(rows, -1, 3, 4)
        a, b, c = packed[..., 0, :], packed[..., 1, :], packed[..., 2, :]
        sc = np.concatenate([a & 0x3F, (c & 0x0F) | ((a >> 2) & 0x30)], axis=-1)  # [N, ns, 8]
        mn = np.concatenate([b & 0x3F, (c >> 4) | ((b >> 2) & 0x30)], axis=-1)
        scale = d * sc.astype(np.float32)  # [N, ns, 8]
        minimum = dmin * mn.astype(np.float32)
        qs = blocks[..., 16:].reshape(rows, -1, 4, 1, 32)
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=-2).reshape(rows, -1, 8, 32)  # [N, ns, 8, 32]
        w = (scale[..., None] * q.astype(np.float32) - minimum[..., None]).reshape(rows, -1)
        scale, minimum = scale.reshape(rows, -1), minimum.reshape(rows, -1)
        return Blocks(4, BLOCK, q.reshape(rows, -1), scale, np.float32(8) * scale - minimum, w)
    if matrix.kind == "Q6_K":
        blocks = raw.reshape(rows, -1, Q6_K_BYTES)
        ql, qh = blocks[..., :128], blocks[..., 128:192]
        scales = blocks[..., 192:208].copy().view(np.int8).astype(np.float32)  # [N, ns, 16]
        d = blocks[..., 208:210].copy().view(np.float16).astype(np.float32)  # [N, ns, 1]
        scale = d * scales  # [N, ns, 16]
        low = (ql.reshape(rows, -1, 2, 1, 64) >> np.array([0, 4], np.uint8).reshape(1, 1, 1, 2, 1)) & np.uint8(0x0F)
        high = (qh.reshape(rows, -1, 2, 1, 32) >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 1, 4, 1)) & np.uint8(3)
        q = (low.reshape(rows, -1, 8, 32) | (high.reshape(rows, -1, 8, 32) << np.uint8(4))).astype(np.int8) - np.int8(32)
        q = q.reshape(rows, -1, 16, 16)  # [N, ns, 16 sub-blocks, 16]
        w = (scale[..., None] * q.astype(np.float32)).reshape(rows, -1)
        return Blocks(8, 16, pack_codes_8bit(q.reshape(rows, -1)), scale.reshape(rows, -1), None, w)
    raise ValueError(f"{matrix.name}: no MatMulNBits form for GGUF type {matrix.kind}")


def pack_codes_8bit(q: np.ndarray) -> np.ndarray:
    """Signed ``q`` ``[N, K]`` → the stored 8-bit codes ``q + 128`` ``[N, K]`` (default zero point 128)."""
    return (q.astype(np.int16) + 128).astype(np.uint8)


def pack_codes(blocks: Blocks) -> np.ndarray:
    """``MatMulNBits``' ``B`` ``[N, K / block, block * bits / 8]`` from the codes."""
    rows = blocks.codes.shape[0]
    if blocks.bits == 8:
        return blocks.codes.reshape(rows, -1, blocks.block)
    pairs = blocks.codes.reshape(rows, -1, blocks.block // 2, 2)
    return (pairs[..., 0] | (pairs[..., 1] << 4)).astype(np.uint8)


def split_nibbles(blocks: Blocks) -> tuple[Blocks, Blocks]:
    """8-bit blocks as two 4-bit ones, exactly: with ``u = lo + 16 hi`` (``u`` the stored code),

        s (u - 128) = s (lo - 8) + 16 s (hi - 8) + 8 s

    so the low nibbles with scale ``s`` plus the high nibbles with scale ``16 s`` plus an offset
    ``8 s`` per block (the caller adds it) give the 8-bit weights. Each term is exact in fp32
    (``s`` has at most 19 significant bits here); only the order of the additions differs.
    """
    if blocks.bits != 8 or blocks.offsets is not None:
        raise ValueError("only 8-bit blocks without offsets split into nibbles")
    low = (blocks.codes & 0x0F).astype(np.uint8)
    high = (blocks.codes >> 4).astype(np.uint8)
    w_low = np.repeat(blocks.scales, blocks.block, axis=1) * (low.astype(np.float32) - 8)
    w_high = np.repeat(np.float32(16) * blocks.scales, blocks.block, axis=1) * (high.astype(np.float32) - 8)
    return (
        Blocks(4, blocks.block, low, blocks.scales, None, w_low),
        Blocks(4, blocks.block, high, np.float32(16) * blocks.scales, None, w_high),
    )
