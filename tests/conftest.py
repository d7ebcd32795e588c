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
