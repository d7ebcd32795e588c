"""MatMulGguf against float64 numpy on random blocks of every format: each mode, M = 1, 8 and 128, odd
N, one and two threads, every ISA path this CPU has (forced through PLAYGROUND_KERNELS_ISA, which
kernel creation reads)."""

from __future__ import annotations

import numpy as np
import pytest

from inference.kernels import describe

from .conftest import ENV_ISA, ISAS
from .one_node import FORMATS, Node, block_size, quantized_activations, random_blocks, relative_error, session, weights

ROWS = (1, 8, 13, 128)  # 13: the kernels' chunks of 8, 4 and 1 rows (AVX2: 2 and 1)
EXACT_TOLERANCE = 2e-6  # an fp32 GEMM on the dequantized weights: max |y - ref| / max |ref|
MODEL_TOLERANCE = 2e-6  # fast mode against its numpy model (the same int8 activations, float64)
FLOAT_TOLERANCE = 3e-2  # fast mode against the float reference: the int8 activations' own error


def shapes(fmt: str) -> list[tuple[int, int]]:
    """(K, N): one block and several, N odd and past a tile of 16."""
    weights_per_block = block_size(fmt)[0]
    return [(weights_per_block, 37), (3 * weights_per_block if weights_per_block == 32 else 2 * weights_per_block, 19)]


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("mode", ["exact", "fast"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_against_float64(kernels_library, cpu_isas, monkeypatch, fmt, mode, isa) -> None:
    if isa not in cpu_isas:
        pytest.skip(f"this CPU has no {isa}")
    monkeypatch.setenv(ENV_ISA, isa)
    assert describe()["isa"] == isa  # the path kernels created now take
    rng = np.random.default_rng([FORMATS.index(fmt), ISAS.index(isa), mode == "fast"])
    for k, n in shapes(fmt):
        raw = random_blocks(fmt, n, k, rng)
        w = weights(fmt, raw)  # [N, K]
        node = Node(fmt, mode, k, n, raw)
        for threads in (1, 2):
            sess = session(kernels_library, node.model(), threads)
            for m in ROWS:
                x = rng.standard_normal((m, k), dtype=np.float32)
                x[-1, :32] = 0.0 if m > 1 else x[-1, :32]  # a block of zeros (fast mode: scale 0)
                y = sess.run(None, {"A": x})[0]  # [M, N]
                assert y.shape == (m, n) and y.dtype == np.float32
                ref = x.astype(np.float64) @ w.T
                where = f"{fmt} {mode} {isa} K={k} N={n} M={m} threads={threads}"
                if mode == "exact":
                    assert relative_error(y, ref) < EXACT_TOLERANCE, where
                else:
                    model = quantized_activations(x) @ w.T
                    assert relative_error(y, model) < MODEL_TOLERANCE, where
                    assert relative_error(y, ref) < FLOAT_TOLERANCE, where


def test_leading_dimensions(kernels_library) -> None:
    """A [2, 3, K]: six rows, Y [2, 3, N]."""
    rng = np.random.default_rng(7)
    raw = random_blocks("Q4_1", 21, 64, rng)
    x = rng.standard_normal((2, 3, 64), dtype=np.float32)
    y = session(kernels_library, Node("Q4_1", "exact", 64, 21, raw, leading=("B", "S")).model()).run(None, {"A": x})[0]
    assert y.shape == (2, 3, 21)
    assert relative_error(y, x.astype(np.float64) @ weights("Q4_1", raw).T) < EXACT_TOLERANCE


@pytest.mark.parametrize("mode", ["exact", "fast"])
def test_no_rows(kernels_library, mode) -> None:
    raw = random_blocks("Q8_0", 21, 64, np.random.default_rng(8))
    y = session(kernels_library, Node("Q8_0", mode, 64, 21, raw).model()).run(None, {"A": np.zeros((0, 64), np.float32)})[0]
    assert y.shape == (0, 21)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("mode", ["exact", "fast"])
@pytest.mark.parametrize("fmt", ["Q4_1", "Q8_0", "Q6_K"])
def test_a_row_is_the_same_alone_and_in_a_batch(kernels_library, cpu_isas, monkeypatch, fmt, mode, isa) -> None:
    """Every row takes the same steps whatever the rows beside it: bit for bit, on either thread count."""
    if isa not in cpu_isas:
        pytest.skip(f"this CPU has no {isa}")
    monkeypatch.setenv(ENV_ISA, isa)
    rng = np.random.default_rng(11)
    k = 256 if fmt == "Q6_K" else 96
    node = Node(fmt, mode, k, 37, random_blocks(fmt, 37, k, rng))
    x = rng.standard_normal((45, k), dtype=np.float32)  # past a panel of 32 rows: chunks of 8, 4 and 1
    batch = session(kernels_library, node.model(), 2).run(None, {"A": x})[0]
    alone = session(kernels_library, node.model(), 1)
    for row in (0, 7, 8, 12, 44):
        assert np.array_equal(alone.run(None, {"A": x[row : row + 1]})[0][0], batch[row]), f"row {row}"


@pytest.mark.parametrize("mode", ["exact", "fast"])
def test_q4_1_scales_of_every_magnitude(kernels_library, mode) -> None:
    """Q4_1's d and m kept as fp16 in the repacked blocks: subnormal, tiny, large, signed zeros, each
    column checked against its own magnitude."""
    values = np.array([2.0**-24, -3 * 2.0**-20, 6.1e-5, 1e-3, 1.0, -0.5, 1000.0, 0.0, -0.0, 65504.0], np.float16)
    n, k = len(values), 64
    raw = random_blocks("Q4_1", n, k, np.random.default_rng(5)).reshape(n, k // 32, 20)
    raw[..., 0:2] = values.view(np.uint8).reshape(n, 1, 2)  # d
    raw[..., 2:4] = values[::-1].copy().view(np.uint8).reshape(n, 1, 2)  # m
    raw = raw.reshape(n, -1)
    x = np.random.default_rng(6).standard_normal((8, k), dtype=np.float32)
    y = session(kernels_library, Node("Q4_1", mode, k, n, raw).model()).run(None, {"A": x})[0].astype(np.float64)
    w = weights("Q4_1", raw)
    ref = (x.astype(np.float64) if mode == "exact" else quantized_activations(x)) @ w.T
    for col in range(n):
        scale = np.abs(ref[:, col]).max()
        assert np.abs(y[:, col] - ref[:, col]).max() <= 2e-6 * scale, f"column {col}: d = {values[col]}"


@pytest.mark.parametrize("mode", ["exact", "fast"])
def test_many_tiles_per_work_item(kernels_library, mode) -> None:
    """N = 1,107: 70 tiles of 16, handed out two to a work item (the last alone, and partly filled)."""
    rng = np.random.default_rng(9)
    raw = random_blocks("Q4_1", 1107, 64, rng)
    x = rng.standard_normal((40, 64), dtype=np.float32)  # two panels of rows
    y = session(kernels_library, Node("Q4_1", mode, 64, 1107, raw).model(), 2).run(None, {"A": x})[0]
    ref = (x.astype(np.float64) if mode == "exact" else quantized_activations(x)) @ weights("Q4_1", raw).T
    assert relative_error(y, ref) < EXACT_TOLERANCE
