"""The build script's one line in each case, its stamp, and the Python side's view of the library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inference.kernels import describe, library_path
from inference.kernels.build import NotBuilt, build, debian_archive, find_header
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
    assert described["formats"] == ["Q4_1", "Q8_0", "Q5_0", "Q4_K", "Q6_K"]


@pytest.mark.parametrize("content", [None, b"not a shared library"])
def test_elsewhere_not_loadable(tmp_path, monkeypatch, content) -> None:
    path = tmp_path / LIBRARY_NAME
    if content is not None:
        path.write_bytes(content)
    monkeypatch.setenv(ENV_LIBRARY, str(path))
    assert library_path() is None
    described = describe()
    assert described["available"] is False and described["why"]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_debian_archive_from_deb822_past_other_repositories(tmp_path) -> None:
    write(
        tmp_path / "sources.list.d" / "a-docker.sources",
        "Types: deb\nURIs: https://packages.example/linux/debian\nSuites: bookworm\nComponents: stable\n",
    )
    write(
        tmp_path / "sources.list.d" / "debian.sources",
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n\n"
        "Types: deb\nURIs: http://mirror.example/off\nSuites: bookworm\nComponents: main\nEnabled: no\n\n"
        "Types: deb\n# a comment\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main contrib\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
    )
    assert debian_archive(tmp_path) == ("http://mirror.example/debian", "/usr/share/keyrings/debian-archive-keyring.gpg")


def test_debian_archive_from_one_line_sources(tmp_path) -> None:
    write(
        tmp_path / "sources.list",
        "# deb http://old.example/debian buster main\n"
        "deb-src http://mirror.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main\n",
    )
    assert debian_archive(tmp_path) == ("http://mirror.example/debian", "/k.gpg")


def test_no_debian_archive(tmp_path) -> None:
    write(tmp_path / "sources.list", "deb http://mirror.example/ubuntu noble main\n")
    with pytest.raises(NotBuilt, match="no Debian archive"):
        debian_archive(tmp_path)
