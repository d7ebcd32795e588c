"""One MatMulGguf node in an ONNX model, random GGUF blocks for it, and the float64 references."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnxruntime as ort
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize
from onnx import TensorProto, helper

from inference.kernels import DOMAIN, OP

FORMATS = ("Q4_1", "Q8_0", "Q5_0", "Q4_K", "Q6_K")
# Byte offsets of each format's fp16 scale fields within its block: random bytes there could be
# infinities or NaNs, so they get finite values instead.
FP16_FIELDS = {"Q4_1": (0, 2), "Q8_0": (0,), "Q5_0": (0,), "Q4_K": (0, 2), "Q6_K": (208,)}


def block_size(fmt: str) -> tuple[int, int]:
    """(weights, bytes) of one block of ``fmt``."""
    return GGML_QUANT_SIZES[GGMLQuantizationType[fmt]]


def random_blocks(fmt: str, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``[n, k / weights * bytes]`` uint8: random codes and finite fp16 scales of either sign."""
    weights, size = block_size(fmt)
    blocks = rng.integers(0, 256, (n, k // weights, size), dtype=np.uint8)
    for offset in FP16_FIELDS[fmt]:
        scale = rng.uniform(0.002, 0.05, (n, k // weights)) * rng.choice([-1.0, 1.0], (n, k // weights))
        blocks[..., offset : offset + 2] = scale.astype(np.float16)[..., None].view(np.uint8)
    return blocks.reshape(n, -1)


def weights(fmt: str, raw: np.ndarray) -> np.ndarray:
    """The blocks dequantized by gguf-py (an implementation independent of ours) as float64 ``[N, K]``."""
    return dequantize(raw, GGMLQuantizationType[fmt]).astype(np.float64)


def quantized_activations(x: np.ndarray) -> np.ndarray:
    """``x`` ``[M, K]`` float32 as the fast kernels see it: int8 per block of 32 (scale max |x| / 127,
    rounded to nearest even, in float32 as the kernels compute it), back in float64."""
    m, k = x.shape
    blocks = x.reshape(m, k // 32, 32)
    d = np.abs(blocks).max(axis=-1, keepdims=True) / np.float32(127)
    inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    q = np.rint(blocks * inv)
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(m, k)


@dataclass(frozen=True)
class Node:
    """What the node is made of; ``model()`` the one-node ONNX model."""

    fmt: str
    mode: str
    k: int
    n: int
    raw: np.ndarray
    a_type: int = TensorProto.FLOAT
    name: str = "probe"
    k_attr: int | None = None  # the attribute K, when it should differ from the data's
    dynamic_k: bool = False  # A's last dimension unknown until a call
    leading: tuple[str, ...] = ("M",)  # A's leading dimensions (M is their product)

    def model(self) -> bytes:
        a = helper.make_tensor_value_info("A", self.a_type, [*self.leading, "K" if self.dynamic_k else self.k])
        y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [*self.leading, self.n])
        b = helper.make_tensor("B", TensorProto.UINT8, self.raw.shape, self.raw.tobytes(), raw=True)
        node = helper.make_node(
            OP, ["A", "B"], ["Y"], name=self.name, domain=DOMAIN,
            format=self.fmt, mode=self.mode, K=self.k if self.k_attr is None else self.k_attr, N=self.n,
        )  # fmt: skip
        graph = helper.make_graph([node], "one_node", [a], [y], initializer=[b])
        opsets = [helper.make_opsetid("", 21), helper.make_opsetid(DOMAIN, 1)]
        return helper.make_model(graph, opset_imports=opsets, ir_version=10).SerializeToString()


def session(library: str, model: bytes | str, threads: int = 1) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.register_custom_ops_library(library)
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def relative_error(y: np.ndarray, ref: np.ndarray) -> float:
    """max |y - ref| / max |ref|."""
    return float(np.abs(y - ref).max() / np.abs(ref).max())
