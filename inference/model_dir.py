"""Where the built model lives and what is inside it.

Deliberately light (standard library only): the server imports it to find the model and read its
manifest without pulling in the export tool chain. Building is ``inference.modelbuild``'s job.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference.models import DEFAULT_MODEL, entry_for

MODEL_DIR_ENV = "PLAYGROUND_MODEL_DIR"
"""Environment variable that overrides the model directory."""

REPO_ROOT = Path(__file__).resolve().parent.parent
MODELS_ROOT = REPO_ROOT / ".models"  # git-ignored
DEFAULT_MODEL_DIR_NAME = entry_for(DEFAULT_MODEL).dir_name  # the default model's (the registry's first)

# Files inside a model directory.
MODEL_FILE = "model.onnx"  # the decoder with KV cache that is served: its graph
# model.onnx's initializers, as ONNX external data: ONNX Runtime maps this file into memory instead of
# copying the weights onto the heap, so the weights our kernels repack are not held twice
WEIGHTS_FILE = "model.onnx.data"
TOKENIZER_FILE = "tokenizer.json"  # for the `tokenizers` library
CONFIG_FILE = "config.json"  # the transformers config the model was exported from
GENERATION_CONFIG_FILE = "generation_config.json"
CHAT_TEMPLATE_FILE = "chat_template.jinja"  # present when the source carries a chat template
MANIFEST_FILE = "manifest.json"  # written last: a directory without it is not a model

# The KV cache's element types a built graph may take (``past_key_values.*``), as numpy names them:
# float32 for the CPU builds, float16 for the GPU variant (inference/modelbuild/cuda_variant.py).
CACHE_DTYPES = {"tensor(float)": "float32", "tensor(float16)": "float16"}

# The decoder graph's contract for models with sliding-window layers (Gemma): those layers read their
# cache lengths from a mask of their own, and the graph's metadata_props say which layers and how far.
SLIDING_MASK = "sliding_attention_mask"  # [B, positions the sliding buffers hold + new] int64
SLIDING_WINDOW_KEY = "sliding_window"  # metadata_props: positions a sliding layer's query attends to, itself included
SLIDING_LAYERS_KEY = "sliding_layers"  # metadata_props: the sliding layers' indices, comma-separated


@dataclass(frozen=True)
class ModelShape:
    """The decoder's dimensions, as the manifest's ``shapes`` record them (``inference.runtime``)."""

    num_layers: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    context_window: int


class ModelNotBuiltError(FileNotFoundError):
    """The model directory has no manifest: the model has not been built there (yet)."""


def default_model_dir() -> Path:
    """``$PLAYGROUND_MODEL_DIR`` if set, else ``<repo>/.models/smollm2-135m-instruct``."""
    override = os.environ.get(MODEL_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return MODELS_ROOT / DEFAULT_MODEL_DIR_NAME


def read_manifest(model_dir: Path | None = None) -> dict[str, Any]:
    """The parsed ``manifest.json`` of ``model_dir`` (default: :func:`default_model_dir`).

    Raises :class:`ModelNotBuiltError` when there is none. Reads JSON only: it does not check the
    files against the recorded hashes (``inference.modelbuild.check_model`` does).
    """
    model_dir = default_model_dir() if model_dir is None else Path(model_dir)
    path = model_dir / MANIFEST_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ModelNotBuiltError(
            f"no model in {model_dir} (missing {MANIFEST_FILE}); "
            "build it with `python manage.py build_model` or `python -m inference.modelbuild`"
        ) from None
    return json.loads(text)


SMOLLM_DOCUMENT_START = "<|endoftext|>"


def document_start(special_tokens: dict[str, Any]) -> str:
    """What completion mode puts before a prompt, from the manifest's ``special_tokens``: the BOS
    the model's own tokenizer adds at a document's start (Gemma's ``<bos>``); for a tokenizer that
    adds none (SmolLM2's), ``<|endoftext|>``, which separated its pre-training documents (its BOS,
    ``<|im_start|>``, opens a chat turn)."""
    if special_tokens.get("tokenizer_adds_bos") and special_tokens.get("bos_token"):
        return str(special_tokens["bos_token"])
    return SMOLLM_DOCUMENT_START
