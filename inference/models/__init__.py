"""The model registry: one :class:`ModelEntry` per model, and the one place every other part asks.

The build (``inference.modelbuild``: its source, transformations, variants, checks), the catalogue
a server serves from (``inference.model_catalog``), the draft models speculative decoding names
(``inference.decoding.loop_params``), the image (``docker/Dockerfile``) and ``scripts/env.sh``
(which packages to install: ``python -m inference.models``) all read the entries registered here:
the built-in ones (``known.py``) at import, and any other :func:`register` adds (the tiny test
models, ``modelbuild.tiny``). Data only: importing it loads no build tool and no model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .entry import (
    VERIFY_PROMPT,
    BuildRecipe,
    DraftModel,
    Kind,
    ModelEntry,
    PackagedGguf,
    Transformation,
)
from .known import BUILT_IN, GEMMA, SMOLLM2

__all__ = [
    "BuildRecipe",
    "DEFAULT_MODEL",
    "DraftModel",
    "GEMMA",
    "Kind",
    "ModelEntry",
    "PackagedGguf",
    "SMOLLM2",
    "Transformation",
    "VERIFY_PROMPT",
    "entries",
    "entry_for",
    "entry_named",
    "register",
    "registered",
    "served_entries",
]

_REGISTRY: dict[str, ModelEntry] = {}


def register(entry: ModelEntry) -> ModelEntry:
    """Add ``entry`` (again: the same object is a no-op); ``ValueError`` for another entry with its id."""
    known = _REGISTRY.get(entry.id)
    if known is not None and known != entry:
        raise ValueError(f"model {entry.id!r} is registered already, as another entry")
    _REGISTRY[entry.id] = entry
    return entry


@contextlib.contextmanager
def registered(entry: ModelEntry) -> Iterator[ModelEntry]:
    """``entry`` registered for the block only (a test's own model)."""
    register(entry)
    try:
        yield entry
    finally:
        del _REGISTRY[entry.id]


def entries() -> tuple[ModelEntry, ...]:
    """Every registered model, in the order registered (the built-in ones first)."""
    return tuple(_REGISTRY.values())


def served_entries() -> tuple[ModelEntry, ...]:
    """The models a server may serve (those with catalogue words), in order: the first is the default."""
    return tuple(e for e in _REGISTRY.values() if e.served)


def entry_for(model_id: str) -> ModelEntry:
    """The entry of ``model_id``; ``KeyError`` naming the known ones otherwise."""
    try:
        return _REGISTRY[model_id]
    except KeyError:
        raise KeyError(f"unknown model {model_id!r}; choose one of {sorted(_REGISTRY)}") from None


def entry_named(model_name: str) -> ModelEntry | None:
    """The entry whose ``model_name`` (as a manifest records it) is ``model_name``, or None."""
    return next((e for e in _REGISTRY.values() if e.model_name == model_name), None)


for _entry in BUILT_IN:
    register(_entry)

DEFAULT_MODEL = BUILT_IN[0].id  # what --model and a frame without ``model`` get
