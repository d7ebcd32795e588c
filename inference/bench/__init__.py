"""Benchmarks and the peers they measure against: decode speed of our engine (``decode``, run as
``python -m inference.bench``), concurrent streams (``concurrency``), and the peer systems on the same
weights (``peers``: llama.cpp on the GGUF, onnxruntime-genai on its own build)."""
