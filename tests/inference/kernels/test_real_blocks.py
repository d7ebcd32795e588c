"""The packaged GGUFs' own blocks (SmolLM2's Q4_1 and Q8_0; Gemma 3's Q5_0, Q4_K, Q6_K and Q8_0 when its
GGUF has been joined), through MatMulGguf exact, against gguf-py's dequantization in float64."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from inference.model_dir import MODELS_ROOT
from inference.modelbuild.gguf_blocks import read_matrices
from inference.modelbuild.source import SOURCES_DIR, SourceNotFoundError, locate_gguf

from .one_node import Node, relative_error, session, weights
from .test_matmul_gguf import EXACT_TOLERANCE

ROWS = 40  # of each matrix: enough for three tiles and a partial one
SMOLLM2 = ("token_embd.weight", "blk.0.ffn_down.weight", "blk.0.attn_k.weight")
GEMMA = ("token_embd.weight", "blk.0.attn_q.weight", "blk.0.attn_output.weight", "blk.0.ffn_down.weight")


@cache
def matrices(path: Path) -> dict:
    """Every matrix of a GGUF (read once: its metadata takes seconds to parse)."""
    return read_matrices(path)


def gguf(model: str) -> Path:
    if model == "smollm2":
        try:
            return locate_gguf()
        except SourceNotFoundError as missing:
            pytest.skip(str(missing))
    path = MODELS_ROOT / SOURCES_DIR / "gemma-3-270m-q4_k_m.gguf"
    if not path.is_file():
        pytest.skip(f"Gemma's GGUF is not joined yet ({path.name}: built with the Gemma model)")
    return path


@pytest.mark.parametrize(("model", "name"), [*(("smollm2", n) for n in SMOLLM2), *(("gemma", n) for n in GEMMA)])
def test_real_blocks_exact(kernels_library, model, name) -> None:
    matrix = matrices(gguf(model))[name]
    raw = np.ascontiguousarray(matrix.raw[:ROWS])  # [40, K / block * bytes]
    x = np.random.default_rng(3).standard_normal((8, matrix.cols), dtype=np.float32)
    sess = session(kernels_library, Node(matrix.kind, "exact", matrix.cols, ROWS, raw).model())
    ref = x.astype(np.float64) @ weights(matrix.kind, raw).T
    assert relative_error(sess.run(None, {"A": x})[0], ref) < EXACT_TOLERANCE, f"{name} ({matrix.kind})"
