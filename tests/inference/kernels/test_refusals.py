"""What the kernel cannot do is refused at session creation, with the node named and the reason."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, RuntimeException

from .conftest import ENV_ISA
from .one_node import Node, random_blocks, session

ORT_ERRORS = (Fail, InvalidArgument, RuntimeException)


def refusal(library: str, node: Node) -> str:
    with pytest.raises(ORT_ERRORS) as caught:
        session(library, node.model())
    return str(caught.value)


@pytest.fixture
def blocks() -> np.ndarray:
    return random_blocks("Q4_1", 37, 64, np.random.default_rng(0))  # [37, 2 * 20]


def test_wrong_byte_count(kernels_library, blocks) -> None:
    message = refusal(kernels_library, Node("Q4_1", "exact", 64, 37, blocks[:, :-1], name="layers.3.mlp"))
    assert "MatMulGguf node 'layers.3.mlp'" in message
    assert "input B must be [N=37, 40] bytes of Q4_1 blocks for K=64; it is [37, 39]" in message


def test_byte_count_of_another_format(kernels_library, blocks) -> None:
    message = refusal(kernels_library, Node("Q8_0", "exact", 64, 37, blocks, name="head"))
    assert "MatMulGguf node 'head'" in message and "[N=37, 68] bytes of Q8_0 blocks" in message


def test_k_not_a_multiple_of_32(kernels_library) -> None:
    raw = np.zeros((5, 40), np.uint8)
    message = refusal(kernels_library, Node("Q4_1", "exact", 48, 5, raw, name="odd_k"))
    assert "MatMulGguf node 'odd_k'" in message and "K=48 is not a multiple of Q4_1's block of 32" in message


def test_k_not_a_multiple_of_a_k_quant_block(kernels_library) -> None:
    raw = random_blocks("Q8_0", 5, 640, np.random.default_rng(0))
    message = refusal(kernels_library, Node("Q4_K", "exact", 640, 5, raw, name="gemma_o"))
    assert "K=640 is not a multiple of Q4_K's block of 256" in message


def test_unknown_format(kernels_library, blocks) -> None:
    message = refusal(kernels_library, Node("Q2_K", "exact", 64, 37, blocks, name="n1"))
    assert "MatMulGguf node 'n1'" in message and "format 'Q2_K' is not supported (one of Q4_1,Q8_0,Q5_0,Q4_K,Q6_K)" in message


def test_unknown_mode(kernels_library, blocks) -> None:
    message = refusal(kernels_library, Node("Q4_1", "approximate", 64, 37, blocks, name="n2"))
    assert "MatMulGguf node 'n2'" in message and '\'mode\': "exact" or "fast"' in message


def test_float64_activations(kernels_library, blocks) -> None:
    message = refusal(kernels_library, Node("Q4_1", "exact", 64, 37, blocks, a_type=TensorProto.DOUBLE, name="n3"))
    assert "MatMulGguf node 'n3'" in message and "input A is float64; it must be float32" in message


def test_activations_of_another_width(kernels_library, blocks) -> None:
    message = refusal(kernels_library, Node("Q4_1", "exact", 64, 37, blocks, k_attr=96, name="n4"))
    assert "MatMulGguf node 'n4'" in message and "input A's last dimension is 64, attribute K is 96" in message


def test_unknown_isa_switch(kernels_library, blocks, monkeypatch) -> None:
    monkeypatch.setenv(ENV_ISA, "sse9")
    message = refusal(kernels_library, Node("Q4_1", "exact", 64, 37, blocks, name="n5"))
    assert "MatMulGguf node 'n5'" in message and "PLAYGROUND_KERNELS_ISA=sse9 is not a path" in message


def test_width_checked_at_run_when_dynamic(kernels_library, blocks) -> None:
    """A's last dimension unknown at creation: a call with another width fails, naming the node."""
    sess = session(kernels_library, Node("Q4_1", "exact", 64, 37, blocks, name="dyn", dynamic_k=True).model())
    assert sess.run(None, {"A": np.ones((2, 64), np.float32)})[0].shape == (2, 37)
    with pytest.raises(ORT_ERRORS) as caught:
        sess.run(None, {"A": np.zeros((1, 96), np.float32)})
    assert "MatMulGguf node 'dyn': input A's last dimension is 96, attribute K is 64" in str(caught.value)
