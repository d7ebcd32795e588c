"""The attention fusion (inference/modelbuild/attention.py) on the tiny model's fp32 export: same inputs and
outputs, same logits and cache, for a prefill from an empty cache, batches, decode steps and several
tokens at once on top of a cache; and the same with one buffer bound as both past and present."""

from __future__ import annotations

import copy
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from inference.modelbuild import attention, steps
from inference.modelbuild.tiny import RandomSource

LAYERS, KV_HEADS, HEAD_DIM = 2, 2, 16


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """The tiny model's fp32 export and its config."""
    work = tmp_path_factory.mktemp("attention")
    RandomSource(0).write_checkpoint(work / "checkpoint", verbosity=0)
    path = steps.export_onnx(work / "checkpoint", work / "onnx", verbosity=0, validate=False)
    return onnx.load(str(path)), json.loads((work / "checkpoint" / "config.json").read_text())


@pytest.fixture(scope="module")
def sessions(export):
    model, config = export
    fused = copy.deepcopy(model)
    summary = attention.fuse(fused, config)
    make = lambda m: ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])  # noqa: E731
    return make(model), make(fused), fused, summary


def run(session, ids: np.ndarray, past: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    batch, n = ids.shape
    done = next(iter(past.values())).shape[2]
    names = [o.name for o in session.get_outputs()]
    out = dict(
        zip(
            names,
            session.run(
                None,
                {
                    "input_ids": ids,
                    "attention_mask": np.ones((batch, done + n), np.int64),
                    "position_ids": np.broadcast_to(np.arange(done, done + n, dtype=np.int64), (batch, n)).copy(),
                    **past,
                },
            ),
        )
    )
    return out["logits"], {k.replace("present", "past_key_values"): v for k, v in out.items() if k != "logits"}


def empty(batch: int) -> dict[str, np.ndarray]:
    return {
        f"past_key_values.{i}.{kv}": np.zeros((batch, KV_HEADS, 0, HEAD_DIM), np.float32)
        for i in range(LAYERS)
        for kv in ("key", "value")
    }


def test_fused_graph_has_the_same_inputs_and_outputs(sessions):
    plain, fused, model, summary = sessions
    spec = lambda args: [(a.name, a.type) for a in args]  # noqa: E731
    assert spec(fused.get_inputs()) == spec(plain.get_inputs())
    assert spec(fused.get_outputs()) == spec(plain.get_outputs())
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("GroupQueryAttention") == LAYERS and "RotaryEmbedding" not in ops  # rotary inside the attention
    assert "Softmax" not in ops and summary["nodes_after"] < summary["nodes_before"] / 2
    names = {n.name for n in model.graph.node}
    assert all(f"/model/layers.{i}/self_attn/{p}_proj/MatMul" in names for i in range(LAYERS) for p in ("qkv", "o"))
    assert not any(f"/self_attn/{p}_proj/MatMul" in name for name in names for p in "qkv")  # packed into qkv_proj


def test_fused_logits_and_cache_match(sessions):
    plain, fused, _, _ = sessions
    rng = np.random.default_rng(0)
    ids = rng.integers(3, 49152, size=(2, 40))

    def check(batch_chunks):
        past_p, past_f = empty(batch_chunks[0].shape[0]), empty(batch_chunks[0].shape[0])
        for chunk in batch_chunks:
            lp, past_p = run(plain, chunk, past_p)
            lf, past_f = run(fused, chunk, past_f)
            assert lf.shape == lp.shape and np.abs(lf - lp).max() < 1e-4
            for name in past_p:
                assert past_f[name].shape == past_p[name].shape
                assert np.abs(past_f[name] - past_p[name]).max() < 1e-4
        return lf

    # batch 2: prefill of 33 tokens from an empty cache, then 7 single steps (what generation and beams do)
    last = check([ids[:, :33], *[ids[:, j : j + 1] for j in range(33, 40)]])
    # batch 1: several tokens at once on top of a cache
    check([ids[:1, :30], ids[:1, 30:33], ids[:1, 33:40]])
    # recomputing the whole sequence from an empty cache (use_cache=False) gives the last step's logits again
    full, _ = run(fused, ids, empty(2))
    assert np.abs(full[:, -1] - last[:, -1]).max() < 1e-4


def test_one_shared_buffer_for_past_and_present_gives_the_same_logits(sessions):
    """The engine's way: a [B, kv, capacity, D] buffer bound as past and present, appended in place."""
    plain, fused, _, _ = sessions
    rng = np.random.default_rng(1)
    ids = rng.integers(3, 49152, size=(2, 20))
    capacity = 32
    buffers = {
        f"past_key_values.{i}.{kv}": np.zeros((2, KV_HEADS, capacity, HEAD_DIM), np.float32)
        for i in range(LAYERS)
        for kv in ("key", "value")
    }
    values = {name: ort.OrtValue.ortvalue_from_numpy(b) for name, b in buffers.items()}
    past_p = empty(2)
    done = 0
    for chunk in [ids[:, :14], *[ids[:, j : j + 1] for j in range(14, 20)]]:
        n = chunk.shape[1]
        binding = fused.io_binding()
        binding.bind_cpu_input("input_ids", chunk)
        binding.bind_cpu_input("attention_mask", np.ones((2, done + n), np.int64))
        binding.bind_cpu_input("position_ids", np.broadcast_to(np.arange(done, done + n), (2, n)).copy())
        binding.bind_output("logits")
        for name, value in values.items():
            binding.bind_ortvalue_input(name, value)
            binding.bind_ortvalue_output(name.replace("past_key_values", "present"), value)
        fused.run_with_iobinding(binding)
        shared = binding.get_outputs()[0].numpy()
        expected, past_p = run(plain, chunk, past_p)
        done += n
        assert np.abs(shared - expected).max() < 1e-4
        for name, buffer in buffers.items():  # the buffer holds exactly the cache so far, nothing after
            assert np.abs(buffer[:, :, :done] - past_p[name]).max() < 1e-4
            assert not buffer[:, :, done:].any()


def test_several_rows_of_several_tokens_on_a_cache_are_refused(sessions):
    """ONNX Runtime's CPU GroupQueryAttention refuses batch > 1 with S > 1 on a non-empty cache (a loud
    error, never a wrong result); no caller does that (prompts start from an empty cache, then one token)."""
    _, fused, _, _ = sessions
    _, past = run(fused, np.full((2, 4), 7), empty(2))
    with pytest.raises(Exception, match="batch_size must be 1"):
        run(fused, np.full((2, 3), 7), past)


def test_unexpected_layout_is_refused(export):
    model, config = export
    broken = copy.deepcopy(model)
    for node in broken.graph.node:
        if node.name == "/model/layers.1/self_attn/o_proj/MatMul":
            node.name = "renamed"
    with pytest.raises(attention.FusionError, match="layer 1"):
        attention.fuse(broken, config)
