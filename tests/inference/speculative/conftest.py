"""The colour tokens the tiny-model runs are steered onto (test_loop_tiny.py says why)."""

from __future__ import annotations

import pytest

from ..helpers import single_token

COLOURS = (" red", " green", " blue")


@pytest.fixture(scope="module")
def colours(tiny_runtime) -> list[int]:
    return [single_token(tiny_runtime, text) for text in COLOURS]
