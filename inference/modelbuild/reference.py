"""The fp32 reference export: the packaged GGUF dequantized to an fp32 transformers checkpoint and
exported by optimum (~70 s, once). ``inference.modelbuild.quality`` judges a built model against
it, and ``inference.bench.peers`` builds the onnxruntime-genai peer from its checkpoint."""

from __future__ import annotations

from pathlib import Path

from ..model_dir import MODELS_ROOT
from . import steps
from .source import locate_gguf

REFERENCE_DIR = MODELS_ROOT / "fp32-reference"  # git-ignored, beside the built models


def export_reference(out_dir: Path = REFERENCE_DIR) -> Path:
    """The fp32 export (checkpoint from the packaged GGUF → optimum) into ``out_dir`` unless
    already there: ``onnx/model.onnx``, with the checkpoint in ``checkpoint/``."""
    path = out_dir / "onnx" / "model.onnx"
    if not path.is_file():
        steps.go_offline()
        steps.convert_gguf(locate_gguf(), out_dir / "checkpoint")
        steps.export_onnx(out_dir / "checkpoint", out_dir / "onnx", validate=False)
    return path
