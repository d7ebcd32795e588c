"""The weights are not resident twice: a model whose initializers lie beside it (model.onnx.data,
written by the build's own ``save_with_weights_beside``) has them mapped by ONNX Runtime, and MatMulGguf hands B's pages back once it
has repacked them; its products stay right."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from inference.model_dir import WEIGHTS_FILE
from inference.modelbuild.steps import save_with_weights_beside

from .one_node import Node, random_blocks, relative_error, session, weights

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")


def resident_kb(path: Path) -> int:
    """This process's resident kB of every mapping of ``path``."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5:  # a mapping's header: address perms offset dev inode [path]
            inside = len(fields) == 6 and fields[5] == str(path)
        elif inside and fields[0] == "Rss:":
            total += int(fields[1])
    return total


def test_repacked_weights_leave_the_mapped_file(kernels_library, tmp_path) -> None:
    rng = np.random.default_rng(3)
    n, k = 4096, 1024  # Q4_1: 2.5 MB of blocks
    raw = random_blocks("Q4_1", n, k, rng)
    model = onnx.load_from_string(Node("Q4_1", "exact", k, n, raw).model())
    path = tmp_path / "model.onnx"
    save_with_weights_beside(model, path)
    data = tmp_path / WEIGHTS_FILE
    assert data.stat().st_size >= raw.nbytes

    sess = session(kernels_library, str(path))
    left = resident_kb(data)
    assert left * 1024 < raw.nbytes / 4, f"{left} kB of {raw.nbytes // 1024} kB still resident"
    x = rng.standard_normal((3, k), dtype=np.float32)
    y = sess.run(None, {"A": x})[0]
    assert relative_error(y, x.astype(np.float64) @ weights("Q4_1", raw).T) < 2e-6
