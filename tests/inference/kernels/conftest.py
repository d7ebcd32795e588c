"""The kernel library, built once for these tests: skipped, saying why, where it cannot be built, except
in CI (``CI=true``: a clean clone on Debian, where the README's commands must build it) and wherever
``PLAYGROUND_KERNELS_REQUIRED=1`` says it must be there: then a library that cannot be built fails."""

from __future__ import annotations

import os

import pytest

from inference.kernels import describe, library_path
from inference.kernels.build import build

ENV_ISA = "PLAYGROUND_KERNELS_ISA"  # forces a path; read at kernel creation
ISAS = ("plain", "avx2", "avx512", "avx512vnni")  # each path needs a subset of the next one's instructions


@pytest.fixture(scope="session")
def kernels_library() -> str:
    line = build()
    path = library_path()
    if path is None:
        if os.environ.get("CI") == "true" or os.environ.get("PLAYGROUND_KERNELS_REQUIRED") == "1":
            pytest.fail(f"the kernel library must build here: {line}")
        pytest.skip(line)
    return str(path)


@pytest.fixture(scope="session")
def cpu_isas(kernels_library: str) -> tuple[str, ...]:
    """The paths this CPU can run: every one up to its best."""
    forced = os.environ.pop(ENV_ISA, None)
    try:
        best = describe()["isa"]
    finally:
        if forced is not None:
            os.environ[ENV_ISA] = forced
    return ISAS[: ISAS.index(best) + 1]
