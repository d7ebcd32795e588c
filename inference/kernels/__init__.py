"""Our own ONNX Runtime kernels for the GGUF's block formats (``src/``, built by ``build.py``)."""

from .library import ATTENTION_OP, DOMAIN, OP, describe, library_path

__all__ = ["ATTENTION_OP", "DOMAIN", "OP", "describe", "library_path"]
