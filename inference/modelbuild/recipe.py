"""What every build shares: the tools and their settings, the manifest's schema.

What differs per model (its source, transformations, variants, recipe version) is its registry
entry's (``inference.models``). Bump a model's ``recipe_version`` whenever a change here or in the
steps would produce a different model directory for it; every model built by an older recipe is
then rebuilt on the next ``ensure_model``.
"""

from __future__ import annotations

import importlib.metadata
import platform

MANIFEST_SCHEMA_VERSION = 1

EXPORT_TASK = "text-generation-with-past"

# What `python -m inference.modelbuild.quality` holds a variant to (docs/model.md).
QUALITY_BOUND = {"min_agreement": 0.995, "max_mean_kl": 1e-3}

# The manifest's quantization method for the GGUF's blocks in MatMulNBits (SmolLM2's Q4_1 and Q8_0).
LOSSLESS_METHOD = "gguf-q4_1-lossless-matmulnbits"
# With our kernel library (inference/kernels) the same blocks, as stored, in MatMulGguf nodes; each
# variant's accuracy_level then picks the kernel: 0 → mode "exact" (fp32 activations and
# accumulation), 4 → "fast" (int8 activations per block of 32, llama.cpp's Q4_1 × Q8_1 arithmetic).
# So `exact` is exact kernels throughout (the tied Q8_0 head too, instead of the 113 MB fp32 table),
# `fast` fast kernels throughout, `balanced` exact layers and a fast head, `fast-fp32-tail` fast
# kernels with exact ones in the last two layers. The Q8_0 embedding Gather becomes GatherBlockQuantized
# over the same 8-bit table in every variant (lossless.py): no kernel build carries the fp32 table.
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
