"""A tiny randomly initialised Llama decoder, built exactly like the real model, for fast engine tests.

Same tokenizer (vocabulary 49152, same special tokens), same optimum export with KV cache, same
inputs and outputs, same manifest schema, same GGUF block formats: only the dimensions and the
weights differ. Its random weights are quantized once into a small GGUF of its own (llama.cpp's
reference rounding, ``gguf.quants``): the layers' matrices as Q4_1 (q/k rows in llama.cpp's
rotary-interleaved order, as the real GGUF stores them), the tied embedding as Q8_0; the
checkpoint holds those blocks dequantized, so the build keeps them bit for bit as it does the real
GGUF's, and each variant runs every kernel the real model does (our kernels' exact and fast
Q4_1 and Q8_0 ones where the library is there). Its text is gibberish; its shapes, names and
manifest are what the engine meets on the real model.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from .. import model_dir as md
from ..models import SMOLLM2, ModelEntry, register
from . import gguf_blocks as gb
from . import steps
from .pipeline import ensure_model
from .progress import Progress
from .source import locate_gguf, random_weights, sha256_file, source_for

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
    return md.MODELS_ROOT / f"{TINY_LLAMA.dir_name}{suffix}"


# The GGUF types of the tiny GGUF's matrices, as the real GGUF's (token_embd: the tied embedding and head).
TINY_GGUF_TYPES = {"layers": "Q4_1", "token_embd": "Q8_0"}
# transformers' weight names → the GGUF's (llama.cpp's llama layout), per layer.
GGUF_NAMES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


class RandomSource:
    """Random weights from ``torch.manual_seed(seed)`` with :data:`TINY_CONFIG`, quantized into a GGUF of
    its own (:data:`TINY_GGUF_TYPES`), and the real tokenizer."""

    def __init__(self, seed: int = 0, entry: ModelEntry | None = None) -> None:
        self.entry = entry or TINY_LLAMA  # another entry: a model with this source and its own recipe
        self.seed = seed
        # Written by write_checkpoint (the same bytes for the same seed and tools): whose blocks the build keeps.
        self.gguf_weights: Path | None = md.MODELS_ROOT / "sources" / f"{TINY_MODEL_NAME}-seed{seed}.gguf"

    def describe(self) -> dict[str, Any]:
        fingerprint = {"seed": self.seed, "config": TINY_CONFIG, "gguf": TINY_GGUF_TYPES}
        # The license: of the tokenizer it borrows.
        return random_weights("random-init", self.seed, TINY_CONFIG, fingerprint, TINY_LLAMA.license)

    def write_checkpoint(self, dest: Path, verbosity: int = 1) -> None:
        steps.go_offline()
        import torch  # heavy, the build extra; after go_offline, which must precede transformers' import
        from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM  # the build extra

        dest.mkdir(parents=True, exist_ok=True)
        _copy_tokenizer(dest, verbosity)
        torch.manual_seed(self.seed)
        config = LlamaConfig(**TINY_CONFIG)
        model = LlamaForCausalLM(config).eval()
        weights = {name: p.detach().numpy() for name, p in model.named_parameters()}
        blocks = write_gguf(self.gguf_weights, weights)
        with torch.no_grad():  # the checkpoint holds what the GGUF's blocks dequantize to, exactly
            for name, parameter in model.named_parameters():
                if name in blocks:
                    parameter.copy_(torch.from_numpy(blocks[name]))
        model.save_pretrained(dest)
        GenerationConfig(
            bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id
        ).save_pretrained(dest)


# Registered as every model is: SmolLM2's recipe (its transformations, variants, recipe version),
# its tokenizer and license, random weights; a build-only model (no catalogue words: never served).
TINY_LLAMA = register(
    ModelEntry(
        id=TINY_MODEL_NAME,
        dir_name=f"tiny-{SMOLLM2.recipe.recipe_version}",
        license=SMOLLM2.license,
        source=RandomSource,
        recipe=SMOLLM2.recipe,
    )
)


def write_gguf(path: Path, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Quantize the tiny model's matrices (``weights``: transformers' names → ``[out, in]`` float32) into a
    GGUF at ``path`` (written whole, then renamed into place); returns, by transformers' name, the
    weights the GGUF's blocks dequantize to (in transformers' row order)."""
    from gguf import GGMLQuantizationType, GGUFWriter, quants  # the build extra

    tensors: dict[str, tuple[np.ndarray, str]] = {}  # GGUF name → (its rows in GGUF order, its type)
    for layer in range(TINY_CONFIG["num_hidden_layers"]):
        for hf, gguf_name in GGUF_NAMES.items():
            rows = weights[f"model.layers.{layer}.{hf}.weight"]  # [out, in]
            heads = {"attn_q": "num_attention_heads", "attn_k": "num_key_value_heads"}.get(gguf_name)
            if heads:  # llama.cpp's rotary interleave: GGUF row order[r] is transformers' row r
                stored = np.empty_like(rows)
                stored[gb.unpermute_rows(rows.shape[0], TINY_CONFIG[heads])] = rows
                rows = stored
            tensors[f"blk.{layer}.{gguf_name}.weight"] = (rows, TINY_GGUF_TYPES["layers"])
    tensors["token_embd.weight"] = (weights["model.embed_tokens.weight"], TINY_GGUF_TYPES["token_embd"])

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    writer = GGUFWriter(str(partial), "llama")
    dequantized: dict[str, np.ndarray] = {}
    for name, (rows, kind) in tensors.items():
        raw = quants.quantize(np.ascontiguousarray(rows, np.float32), GGMLQuantizationType[kind])  # [N, K / 32 * bytes]
        writer.add_tensor(name, raw, raw_dtype=GGMLQuantizationType[kind])
        blocks = gb.blocks_of(gb.GgufMatrix(name, kind, rows.shape[0], rows.shape[1], raw))
        dequantized[name] = blocks.dequantized
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(partial, path)

    by_hf = {"model.embed_tokens.weight": dequantized["token_embd.weight"]}
    for layer in range(TINY_CONFIG["num_hidden_layers"]):
        for hf, gguf_name in GGUF_NAMES.items():
            rows = dequantized[f"blk.{layer}.{gguf_name}.weight"]
            heads = {"attn_q": "num_attention_heads", "attn_k": "num_key_value_heads"}.get(gguf_name)
            if heads:
                rows = rows[gb.unpermute_rows(rows.shape[0], TINY_CONFIG[heads])]
            by_hf[f"model.layers.{layer}.{hf}.weight"] = rows
    return by_hf


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


def build_tiny_model(
    out_dir: Path, seed: int = 0, *, force: bool = False, progress: Progress | None = None, variant: str | None = None
) -> Path:
    """Build (or find up to date) the tiny model in ``out_dir`` (``variant``: one of SmolLM2's, default
    its default); returns ``out_dir``.

    Idempotent like :func:`ensure_model`: a second call costs a hash check (milliseconds).
    """
    return ensure_model(Path(out_dir), progress, force=force, source=source_for(TINY_LLAMA, seed=seed), variant=variant)
