"""Our own ONNX Runtime kernels for the GGUF's block formats (``src/``, built by ``build.py``)."""

from .library import DOMAIN, OP, describe, library_path

__all__ = ["DOMAIN", "OP", "describe", "library_path"]
