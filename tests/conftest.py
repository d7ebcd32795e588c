"""Fixtures shared by the whole suite: the real built model, loaded once."""

from __future__ import annotations

import pytest

from inference.engine import CPU
from inference.model_dir import default_model_dir
from inference.runtime import Runtime, load_runtime


@pytest.fixture(scope="session")
def real_runtime() -> Runtime:
    """The real SmolLM2 model. The test command builds it first; a missing model is a failure."""
    return load_runtime(default_model_dir(), (CPU,), intra_op_threads=2)


@pytest.fixture(scope="session")
def tiny_runtime() -> Runtime:
    """A tiny randomly initialised decoder exported the same way as the real one (cached in .models/)."""
    from inference.modelbuild import Progress, build_tiny_model, default_tiny_dir

    return load_runtime(build_tiny_model(default_tiny_dir(), progress=Progress()), (CPU,), intra_op_threads=1)


@pytest.fixture(scope="session")
def tiny_gemma_runtime(tmp_path_factory) -> Runtime:
    """A tiny randomly initialised Gemma 3 (sliding window 8) built through Gemma's recipe (~20 s)."""
    from inference.modelbuild import Progress
    from inference.modelbuild.tiny_gemma import build_tiny_gemma

    model_dir = build_tiny_gemma(tmp_path_factory.mktemp("models") / "tiny-gemma", progress=Progress())
    return load_runtime(model_dir, (CPU,), intra_op_threads=1)
