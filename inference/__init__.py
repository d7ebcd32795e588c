"""Inference: the ONNX model build, the decoder engine with its KV cache, and the sampler chain.

Nothing in this package imports Django: the web side drives it through plain Python objects.
"""
