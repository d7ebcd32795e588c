"""The GPU build variant (inference/modelbuild/cuda_variant.py) of the tiny model, and the build-time
check of every node against the CUDA kernel table (cuda_check.py), run here on the CPU."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from inference import model_kernels
from inference.engine import CPU
from inference.model_dir import MANIFEST_FILE, MODEL_FILE
from inference.modelbuild import Progress, build_tiny_model, cuda_check, default_tiny_dir
from inference.models import SMOLLM2
from inference.runtime import load_runtime

PROMPT = [0, 504, 3575, 282, 4649, 314]


@pytest.fixture(scope="module")
def exact_dir():
    """The tiny model's default (exact) build, built here when no earlier test has."""
    return build_tiny_model(default_tiny_dir(), progress=Progress())


@pytest.fixture(scope="module")
def cuda_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-cuda", variant="cuda", progress=Progress())


def test_the_gpu_variant_keeps_float16_inside_and_float32_logits(cuda_dir):
    model = onnx.load(str(cuda_dir / MODEL_FILE))
    inputs = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
    outputs = {o.name: o.type.tensor_type.elem_type for o in model.graph.output}
    past = [name for name in inputs if name.startswith("past_key_values.")]
    assert past and all(inputs[name] == TensorProto.FLOAT16 for name in past)
    assert all(outputs[name.replace("past_key_values", "present")] == TensorProto.FLOAT16 for name in past)
    assert outputs["logits"] == TensorProto.FLOAT
    ops = {node.op_type for node in model.graph.node}
    assert "MatMulGguf" not in ops and "MatMulNBits" in ops  # ONNX Runtime's kernels, never our CPU ones
    assert cuda_check.unsupported_nodes(model) == []


def test_the_manifest_records_the_check_and_no_kernel_library(cuda_dir):
    manifest = json.loads((cuda_dir / MANIFEST_FILE).read_text())
    assert manifest["variant"] == "cuda"
    assert manifest["kernels"]["library"] is None
    cuda = manifest["onnx"]["transformations"]["cuda"]
    assert cuda["cuda_kernels"]["nodes_checked"] == manifest["onnx"]["nodes"]
    assert cuda["float32"] == ["logits"]
    assert manifest["quantization"]["fidelity"] == SMOLLM2.recipe.variants["cuda"]["fidelity"]


def test_the_engine_runs_the_gpu_graph_on_the_cpu_provider_close_to_the_exact_build(cuda_dir, exact_dir):
    exact = load_runtime(exact_dir, (CPU,), intra_op_threads=1).decoder
    half = load_runtime(cuda_dir, (CPU,), intra_op_threads=1).decoder
    assert half.cache_dtype == "float16" and half.new_state().past.buffers[0].dtype == np.float16
    states = [exact.new_state(), half.new_state()]
    logits = [state.append_tokens(PROMPT) for state in states]
    for _ in range(8):
        assert logits[1].dtype == np.float32
        np.testing.assert_allclose(logits[1], logits[0], atol=0.05)  # float16 activations: close, not equal
        token = int(np.argmax(logits[0][0]))
        logits = [state.append_tokens([token]) for state in states]


def test_the_exact_graph_fails_the_check_naming_its_float32_attention(exact_dir):
    model = onnx.load(str(exact_dir / MODEL_FILE), load_external_data=False)
    with pytest.raises(cuda_check.CudaKernelError) as caught:
        cuda_check.check(model)
    attention = [n for n in model.graph.node if n.op_type in ("GroupQueryAttention", model_kernels.ATTENTION_OP_TYPE)]
    assert attention and all(n.name in str(caught.value) for n in attention)
    # ONNX Runtime's attention is named for its float32 type; ours (where the library built it) for being CPU-only
    ours = attention[0].op_type == model_kernels.ATTENTION_OP_TYPE
    assert ("playground.kernels:GroupAttention" if ours else "T=float;") in str(caught.value)


def test_an_operator_without_a_cuda_kernel_fails_the_check_with_its_name():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4])
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["s"], name="fine_sigmoid"),
        helper.make_node("Unique", ["s"], ["y"], name="the_unique_one"),
    ]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 18)])
    found = cuda_check.unsupported_nodes(model)
    assert [(f.node, f.op) for f in found] == [("the_unique_one", "ai.onnx:Unique")]
    assert "no CUDA kernel at opset 18" in found[0].why


def test_a_type_the_cuda_kernel_does_not_take_fails_the_check():
    x = helper.make_tensor_value_info("x", TensorProto.INT64, [4])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [4])
    model = helper.make_model(
        helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"], name="int_sigmoid")], "g", [x], [y]),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    [found] = cuda_check.unsupported_nodes(model)
    assert found.node == "int_sigmoid" and found.why.startswith("T=int64;")
