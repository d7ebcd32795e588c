"""The models a server serves (``PLAYGROUND_MODELS``) and what it tells people about each.

Every fact per model (its directory, manifest name, license, display name, base or instruct, who
made it, its markup) is its registry entry's (``inference.models``); this module says what serving
does with them: which models are configured, in which order (the first is the default: a frame
without ``model`` gets it), where each one's directory is, what ``GET /api/models`` says, and what
a build variant means. Light: the standard library and the registry only, so the web process
reads it without loading a model.

Model directories: ``<root>/<dir_name>``, the root ``.models/`` unless ``PLAYGROUND_MODELS_ROOT``
says otherwise (the image's ``/opt/models``); ``PLAYGROUND_MODEL_DIR`` still moves the first
(default) model's, and ``PLAYGROUND_MODEL_DIR_<ID>`` (the id upper-cased, ``-`` as ``_``, e.g.
``PLAYGROUND_MODEL_DIR_GEMMA_3_270M``) any one's.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from inference.model_dir import (
    CHAT_TEMPLATE_FILE,
    MANIFEST_FILE,
    MODEL_DIR_ENV,
    MODELS_ROOT,
    TOKENIZER_FILE,
    ModelNotBuiltError,
    document_start,
    read_manifest,
)
from inference.model_kernels import serving_text
from inference.modelbuild.cuda_variant import fidelity_note
from inference.models import SMOLLM2, ModelEntry, served_entries

MODELS_ENV = "PLAYGROUND_MODELS"
MODELS_ROOT_ENV = "PLAYGROUND_MODELS_ROOT"


class _Catalog(Mapping[str, ModelEntry]):
    """The served models' registry entries by id, in the registry's order (the first is the default),
    read from the registry at each use: an entry registered later is catalogued too."""

    def __getitem__(self, model_id: str) -> ModelEntry:
        entry = next((e for e in served_entries() if e.id == model_id), None)
        if entry is None:
            raise KeyError(model_id)
        return entry

    def __iter__(self) -> Iterator[str]:
        return iter([e.id for e in served_entries()])

    def __len__(self) -> int:
        return len(served_entries())


CATALOG: Mapping[str, ModelEntry] = _Catalog()
DEFAULT_MODELS: tuple[str, ...] = tuple(CATALOG)  # the built-in served models; the first is the default

# What a build variant means for the probabilities shown (a variant without a note shows none).
VARIANT_NOTES = {
    "exact": "every weight as the GGUF stores it: every probability is the model's",
    "exact-8bit": "every weight as the GGUF stores it (8-bit kernels): every probability is the model's",
    "cuda": fidelity_note(SMOLLM2.recipe.variants["cuda"]),  # the GPU build: its measured fidelity
}


def configured_models(env: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """The ids ``PLAYGROUND_MODELS`` names (comma-separated; default every catalogued model), the
    default first. ``ValueError`` naming the setting for an unknown, repeated or empty list."""
    raw = env.get(MODELS_ENV, "")
    names = tuple(name.strip() for name in raw.split(",") if name.strip()) if raw.strip() else tuple(CATALOG)
    unknown = [name for name in names if name not in CATALOG]
    if unknown:
        raise ValueError(f"{MODELS_ENV} names unknown models {unknown}; choose from {list(CATALOG)}")
    if len(set(names)) != len(names):
        raise ValueError(f"{MODELS_ENV} names a model twice: {raw!r}")
    return names


def model_dir_for(model_id: str, served: Sequence[str], env: Mapping[str, str] = os.environ) -> Path:
    """Where ``model_id``'s build lives (see the module docstring)."""
    own = env.get(f"{MODEL_DIR_ENV}_{model_id.upper().replace('-', '_')}")
    if own:
        return Path(own).expanduser()
    if served and model_id == served[0] and env.get(MODEL_DIR_ENV):
        return Path(env[MODEL_DIR_ENV]).expanduser()
    root = Path(env[MODELS_ROOT_ENV]).expanduser() if env.get(MODELS_ROOT_ENV) else MODELS_ROOT
    return root / CATALOG[model_id].dir_name


def resolve(name: str, served: Sequence[str]) -> str | None:
    """The served model ``name`` means (its id or its manifest name, case ignored), or None."""
    wanted = name.casefold()
    for model_id in served:
        if wanted in (model_id.casefold(), CATALOG[model_id].model_name.casefold()):
            return model_id
    return None


def describe(model_id: str, model_dir: Path) -> dict[str, Any]:
    """What ``GET /api/models`` says about one served model (docs/websocket-api.md, *Models*):
    the catalogue's words and its build's manifest (nulls where it is not built)."""
    entry = CATALOG[model_id]
    try:
        manifest: dict[str, Any] | None = read_manifest(model_dir)
    except (ModelNotBuiltError, ValueError, OSError):
        manifest = None
    facts: dict[str, Any] = {
        "id": entry.id,
        "model_name": entry.model_name,
        "display_name": entry.display_name,
        "kind": entry.kind,
        "license": entry.license_link,
        "variant": None,
        "variant_note": None,
        "kernels": None,
        "vocab_size": None,
        "context_window": None,
        "special_tokens": None,
        "chat": {"available": False, "reason": f"{model_id} is not built on this server"},
        "built": manifest is not None,
    }
    if manifest is None:
        return facts
    variant = manifest.get("variant")
    has_template = (model_dir / CHAT_TEMPLATE_FILE).is_file()
    return facts | {
        "variant": variant,
        "variant_note": VARIANT_NOTES.get(str(variant)),
        "kernels": serving_text(manifest),
        "vocab_size": int(manifest["shapes"]["vocab_size"]),
        "context_window": int(manifest["shapes"]["context_window"]),
        "special_tokens": named_special_tokens(manifest) | {"ids": special_token_ids(model_id, model_dir)},
        "chat": {"available": has_template, "reason": None if has_template else entry.no_chat_reason()},
        "built_at": manifest.get("built_at"),
    }


def named_special_tokens(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A build's named special tokens: what completion puts first, its BOS and its end tokens."""
    special = manifest.get("special_tokens", {})
    return {
        "document_start": document_start(special),
        "bos": special.get("bos_token"),
        "eos": list(special.get("eos_tokens", [])),
    }


def special_token_ids(model_id: str, model_dir: Path) -> list[list[int]]:
    """Every id the page labels as a special token, as ``[first, last]`` ranges in order: the build's
    tokenizer's special (control) tokens and the catalogue's ``markup``. The ids, not the texts:
    Gemma has 6,252 of them (6,241 reserved ``<unusedN>``) in two ranges. Read once per build; none
    when the build has no tokenizer file."""
    path = model_dir / TOKENIZER_FILE
    try:
        mtime_ns = path.stat().st_mtime_ns
    except OSError:
        return []
    return [list(r) for r in _special_ranges(str(path), mtime_ns, CATALOG[model_id].markup)]


@lru_cache(maxsize=8)
def _special_ranges(path: str, mtime_ns: int, markup: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    added = _added_tokens(Path(path).read_text(encoding="utf-8"))
    ids = {int(t["id"]) for t in added if t.get("special") or t.get("content") in markup}
    ranges: list[tuple[int, int]] = []
    for i in sorted(ids):
        if ranges and ranges[-1][1] == i - 1:
            ranges[-1] = (ranges[-1][0], i)
        else:
            ranges.append((i, i))
    return tuple(ranges)


def _added_tokens(text: str) -> list[dict[str, Any]]:
    """A tokenizer file's ``added_tokens`` (special or not; the markup a GGUF types "user-defined"
    is among them), read without parsing the whole vocabulary that follows (33 MB for Gemma)."""
    key = text.find('"added_tokens":')
    if key < 0:
        return list(json.loads(text).get("added_tokens", []))
    start = text.index("[", key)
    return list(json.JSONDecoder().raw_decode(text, start)[0])


# The tokenizer's own markup (SmolLM2's <|im_start|>): special whatever the model.
SPECIAL_TOKEN_SHAPE = re.compile(r"<\|[^|]*\|>")


def special_token_texts(model_id: str, served: Sequence[str] = ()) -> frozenset[str]:
    """The texts of ``model_id``'s named special tokens (Gemma's ``<bos>``, ``<eos>``), read off
    its build's manifest; none when it is not built here (``is_special_token`` still knows markup)."""
    if model_id not in CATALOG:
        return frozenset()
    try:
        manifest = read_manifest(model_dir_for(model_id, served))
    except (ModelNotBuiltError, ValueError, OSError):
        return frozenset()
    named = named_special_tokens(manifest)
    return frozenset(t for t in (named["document_start"], named["bos"], *named["eos"]) if t)


def is_special_token(text: str, named: frozenset[str]) -> bool:
    """As the page decides (``format.js``' ``isSpecialToken``): markup like ``<|im_start|>``, or a
    model's named special token."""
    return bool(SPECIAL_TOKEN_SHAPE.fullmatch(text)) or text in named


def chat_refusal(model_id: str, served: Sequence[str]) -> str | None:
    """Why chat mode is refused for this model (its build has no chat template), or None. A model
    not built yet is not refused here: its requests fail as the build's absence says."""
    model_dir = model_dir_for(model_id, served)
    if (model_dir / MANIFEST_FILE).is_file() and not (model_dir / CHAT_TEMPLATE_FILE).is_file():
        return CATALOG[model_id].no_chat_reason()
    return None


def display_name(model_id: str | None, fallback: str | None = None) -> str:
    """The one name every page shows for a model: the catalogue's display name ("SmolLM2 135M
    Instruct", "Gemma 3 270M (base)"); for a model the catalogue does not know, ``fallback`` (a saved
    run's manifest name) or its id. The pages read the same names from ``GET /api/models``."""
    entry = CATALOG.get(model_id or "")
    return entry.display_name if entry else fallback or model_id or ""
