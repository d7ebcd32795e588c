"""The GPU build variant: the exact graph made to run every node on ONNX Runtime's CUDA provider.

A variant whose settings carry ``"device": "cuda"`` (SmolLM2's ``cuda`` in its registry entry,
``inference.models.known``) is built as the exact variant is, with ONNX Runtime's own
``MatMulNBits`` (our kernels in ``inference.kernels`` are CPU code: the build does not use them,
:func:`kernels_for`), and then :func:`to_cuda`:

1. every float32 tensor becomes float16 (``onnxruntime.transformers.float16``): activations,
   weights' scales and offsets, the rotary tables and the KV cache (``past_key_values.*`` /
   ``present.*`` float16), because CUDA's GroupQueryAttention takes float16 or bfloat16 only;
2. except ``logits``, kept float32 (a Cast at the end): the sampler chain reads them unchanged;
3. every node is checked against the CUDA kernel table (``cuda_check``): one that would fall back
   to the CPU fails the build with its name.

The fidelity of this graph against the exact CPU build is in the variant's settings
(``fidelity``), measured with ``python -m inference.modelbuild.quality`` (docs/model.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import cuda_check

DEVICE_KEY = "device"
CUDA_DEVICE = "cuda"
LOGITS = "logits"


def is_cuda(settings: Mapping[str, Any]) -> bool:
    """Whether a variant's settings ask for the CUDA graph."""
    return settings.get(DEVICE_KEY) == CUDA_DEVICE


def kernels_for(settings: Mapping[str, Any], kernels: dict[str, Any]) -> dict[str, Any]:
    """The kernel library a build with ``settings`` uses: none for the CUDA variant (our kernels
    run on the CPU only), ``kernels`` (``model_kernels.library_for``) otherwise."""
    if is_cuda(settings):
        return {"library": None, "why": "the cuda variant runs ONNX Runtime's CUDA kernels only"}
    return kernels


def fidelity_note(settings: Mapping[str, Any]) -> str | None:
    """The words the page shows for the variant: its measured fidelity against the exact build."""
    fidelity = settings.get("fidelity")
    if not fidelity:
        return None
    return (
        f"float16 on the GPU: top-1 agreement {fidelity['agreement']:.4f}, mean KL {fidelity['mean_kl']:.0e} "
        f"against the exact build ({fidelity['measured']})"
    )


def to_cuda(model: Any) -> tuple[Any, dict[str, Any]]:
    """``model`` (an ``onnx.ModelProto``, the exact graph) in float16 with float32 logits, checked
    against the CUDA kernel table. Returns the new model and what the manifest records.
    Raises ``cuda_check.CudaKernelError`` naming the nodes CUDA has no kernel for."""
    from onnxruntime.transformers.float16 import convert_float_to_float16  # needs onnx: the build extra

    before = len(model.graph.node)
    converted = convert_float_to_float16(model, keep_io_types=[LOGITS], disable_shape_infer=True)
    checked = cuda_check.check(converted)
    return converted, {
        "float16": "activations, weights' scales, rotary tables and the KV cache",
        "float32": [LOGITS],
        "casts_added": len(converted.graph.node) - before,
        "cuda_kernels": checked,
    }
