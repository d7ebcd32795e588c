"""A tiny randomly initialised Llama decoder, built exactly like the real model, for fast engine tests.

Same tokenizer (vocabulary 49152, same special tokens), same optimum export with KV cache, same
inputs and outputs, same manifest schema: only the dimensions and the weights differ, and, having
no GGUF blocks to keep, its weights are quantized by ``MatMulNBitsQuantizer`` (4 bits, block 32,
symmetric). Its text is gibberish; its shapes, names and manifest are what the engine meets on the
real model.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from .. import model_dir as md
from . import recipe, steps
from .models import SMOLLM2
from .pipeline import ensure_model
from .progress import Progress
from .source import locate_gguf, sha256_file

TINY_MODEL_NAME = "tiny-random-llama"

TINY_CONFIG: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,  # head_dim 16
    "num_key_value_heads": 2,
    "max_position_embeddings": 512,
    "vocab_size": 49152,  # the real tokenizer's
    "tie_word_embeddings": True,
    "rope_theta": 100000.0,
    "rms_norm_eps": 1e-5,
    "bos_token_id": 1,  # <|im_start|>
    "eos_token_id": 2,  # <|im_end|>
    "pad_token_id": 2,
}


def default_tiny_dir(seed: int = 0) -> Path:
    """``<repo>/.models/tiny-<recipe version>`` (``-seed<n>`` appended for a seed other than 0)."""
    suffix = "" if seed == 0 else f"-seed{seed}"
    return md.MODELS_ROOT / f"tiny-{recipe.RECIPE_VERSION}{suffix}"


class RandomSource:
    """Random weights from ``torch.manual_seed(seed)`` with :data:`TINY_CONFIG`, and the real tokenizer."""

    model_name = TINY_MODEL_NAME
    recipe = SMOLLM2
    gguf_weights = None  # every weight is requantized, as MatMulNBitsQuantizer does it

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def describe(self) -> dict[str, Any]:
        recipe_text = json.dumps({"seed": self.seed, "config": TINY_CONFIG}, sort_keys=True)
        return {
            "kind": "random-init",
            "package": None,
            "version": None,
            "file": None,
            "sha256": hashlib.sha256(recipe_text.encode()).hexdigest(),
            "license": recipe.SOURCE_LICENSE,  # of the tokenizer it borrows
            "seed": self.seed,
            "config": dict(TINY_CONFIG),
        }

    def write_checkpoint(self, dest: Path, verbosity: int = 1) -> None:
        steps.go_offline()
        import torch  # heavy, the build extra; after go_offline, which must precede transformers' import
        from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM  # the build extra

        dest.mkdir(parents=True, exist_ok=True)
        _copy_tokenizer(dest, verbosity)
        torch.manual_seed(self.seed)
        config = LlamaConfig(**TINY_CONFIG)
        model = LlamaForCausalLM(config).eval()
        model.save_pretrained(dest)
        GenerationConfig(
            bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id
        ).save_pretrained(dest)


def _copy_tokenizer(dest: Path, verbosity: int) -> None:
    """The real tokenizer: from an intact real model directory if there is one, else from the GGUF."""
    real = md.default_model_dir()
    if _has_intact_tokenizer(real):
        for name in (md.TOKENIZER_FILE, md.CHAT_TEMPLATE_FILE):
            if (real / name).is_file():
                shutil.copyfile(real / name, dest / name)
        return
    steps.save_gguf_tokenizer(locate_gguf(), dest, verbosity)


def _has_intact_tokenizer(model_dir: Path) -> bool:
    try:
        recorded = md.read_manifest(model_dir)["files"][md.TOKENIZER_FILE]["sha256"]
    except (OSError, ValueError, KeyError):
        return False
    path = model_dir / md.TOKENIZER_FILE
    return path.is_file() and sha256_file(path) == recorded


def build_tiny_model(out_dir: Path, seed: int = 0, *, force: bool = False, progress: Progress | None = None) -> Path:
    """Build (or find up to date) the tiny model in ``out_dir``; returns ``out_dir``.

    Idempotent like :func:`ensure_model`: a second call costs a hash check (milliseconds).
    """
    return ensure_model(Path(out_dir), progress, force=force, source=RandomSource(seed))
