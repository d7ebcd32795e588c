"""The graph transformations after the attention fusion, on the tiny model's fp32 export: ONNX Runtime's
norm fusions, packed gate/up and the ``logits_to_keep`` head keep the logits of the export."""

from __future__ import annotations

import copy
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from inference.modelbuild import attention, head, mlp, norms, steps
from inference.modelbuild.tiny import RandomSource

LAYERS, KV_HEADS, HEAD_DIM = 2, 2, 16


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    work = tmp_path_factory.mktemp("transform")
    RandomSource(0).write_checkpoint(work / "checkpoint", verbosity=0)
    path = steps.export_onnx(work / "checkpoint", work / "onnx", verbosity=0, validate=False)
    return onnx.load(str(path)), json.loads((work / "checkpoint" / "config.json").read_text())


@pytest.fixture(scope="module")
def transformed(export):
    model, config = export
    lean = copy.deepcopy(model)
    summaries = {
        "norms": norms.fuse(lean),
        "attention": attention.fuse(lean, config),
        "mlp": mlp.pack_gate_up(lean, config),
        "head": head.keep_last_positions(lean),
    }
    return lean, summaries


def session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def logits(s, ids, keep=None):
    batch, n = ids.shape
    feed = {
        "input_ids": ids,
        "attention_mask": np.ones((batch, n), np.int64),
        "position_ids": np.broadcast_to(np.arange(n), (batch, n)).copy(),
        **{
            f"past_key_values.{i}.{kv}": np.zeros((batch, KV_HEADS, 0, HEAD_DIM), np.float32)
            for i in range(LAYERS)
            for kv in ("key", "value")
        },
    }
    if keep is not None:
        feed["logits_to_keep"] = np.array(keep, np.int64)
    return s.run(["logits"], feed)[0]


def test_the_lean_graph_has_the_fused_operators(transformed):
    model, summaries = transformed
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("SkipSimplifiedLayerNormalization") == 2 * LAYERS and ops.count("SimplifiedLayerNormalization") == 1
    assert not {"Pow", "ReduceMean", "Sqrt", "Div"} & set(ops)
    assert ops.count("Split") == LAYERS and ops.count("MatMul") == 4 * LAYERS + 1  # qkv, o, gate_up, down; the head
    assert summaries["norms"]["skip_simplified_layer_norms"] == 2 * LAYERS
    assert [i.name for i in model.graph.input][-1] == "logits_to_keep"


def test_the_lean_graph_gives_the_exports_logits(export, transformed):
    plain, lean = session(export[0]), session(transformed[0])
    ids = np.random.default_rng(0).integers(3, 49152, size=(2, 17))
    expected = logits(plain, ids)
    np.testing.assert_allclose(logits(lean, ids, keep=0), expected, rtol=0, atol=1e-4)  # 0: every position
    last = logits(lean, ids, keep=1)
    assert last.shape == (2, 1, expected.shape[-1])
    np.testing.assert_allclose(last[:, 0], expected[:, -1], rtol=0, atol=1e-4)
    assert logits(lean, ids, keep=3).shape == (2, 3, expected.shape[-1])
