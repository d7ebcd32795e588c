"""The build script's one line in each case, its stamp, and the Python side's view of the library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inference.kernels import describe, library_path
from inference.kernels.build import build, find_header
from inference.kernels.library import ENV_LIBRARY, KERNELS_DIR, LIBRARY_NAME

ROOT = Path(__file__).resolve().parents[3]


def test_builds_then_up_to_date(kernels_library, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ORT_INCLUDE", str(find_header(KERNELS_DIR)))
    out = tmp_path / ".kernels"
    first = build(out)
    assert first.startswith("kernels: built ") and first.endswith(")")
    assert (out / LIBRARY_NAME).is_file()
    assert build(out) == "kernels: up to date"


def test_no_headers_is_one_line_and_exit_0(tmp_path) -> None:
    env = {"PATH": "/usr/bin:/bin", "ORT_INCLUDE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "inference.kernels.build"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout == (
        "kernels: not built (no headers: ORT_INCLUDE names a folder without onnxruntime_c_api.h); the MatMulNBits graph serves\n"
    )


def test_no_compiler(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CC", "no-such-compiler")
    assert build(tmp_path) == "kernels: not built (no compiler: no-such-compiler is not on PATH); the MatMulNBits graph serves"


def test_library_path_and_describe(kernels_library) -> None:
    assert library_path() == Path(kernels_library)
    described = describe()
    assert described["path"] == kernels_library
    assert described["isa"] in ("plain", "avx2", "avx512", "avx512vnni")
    assert described["version"].count(".") == 2


@pytest.mark.parametrize("content", [None, b"not a shared library"])
def test_elsewhere_not_loadable(tmp_path, monkeypatch, content) -> None:
    path = tmp_path / LIBRARY_NAME
    if content is not None:
        path.write_bytes(content)
    monkeypatch.setenv(ENV_LIBRARY, str(path))
    assert library_path() is None
    described = describe()
    assert described["available"] is False and described["why"]
