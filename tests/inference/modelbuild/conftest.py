"""Fixtures for the model build tests: the tiny model, built once per session into a temp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference.modelbuild import Progress, build_tiny_model


class RecordingProgress(Progress):
    """Keeps a build's events so a test can tell what the build did."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.messages: list[str] = []

    def step_started(self, index: int, total: int, name: str) -> None:
        self.started.append(name)

    def info(self, message: str) -> None:
        self.messages.append(message)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    """A tiny model built by this session (not the shared cache: these tests examine a fresh build)."""
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny", seed=0, progress=Progress())
