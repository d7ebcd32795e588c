"""The build pipeline on the tiny model: manifest schema, idempotency, rebuild on damage, atomicity."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from inference import model_dir as md
from inference import model_kernels
from inference.modelbuild import build_tiny_model, read_manifest, recipe, steps
from inference.modelbuild.source import sha256_file
from inference.models import SMOLLM2

from .conftest import RecordingProgress

MANIFEST_KEYS = {
    "schema_version",
    "recipe_version",
    "model_name",
    "architecture",
    "source",
    "tools",
    "export",
    "quantization",
    "shapes",
    "onnx",
    "onnx_sha256",
    "special_tokens",
    "chat_template_file",
    "files",
    "verification",
    "build_seconds",
    "built_at",
    "variant",
    "kernels",
}
TOOLS = {"python", "torch", "transformers", "optimum", "optimum-onnx", "onnx", "onnxruntime", "gguf", "tokenizers", "numpy"}


def test_manifest_schema(tiny_dir):
    m = read_manifest(tiny_dir)
    assert m.keys() >= MANIFEST_KEYS
    assert m["recipe_version"] == SMOLLM2.recipe.recipe_version and m["model_name"] == "tiny-random-llama"
    assert {"package", "version", "file", "sha256", "license"} <= m["source"].keys()
    assert m["tools"].keys() >= TOOLS and all(m["tools"][t] for t in TOOLS)
    kernels = model_kernels.library_now()["library"] is not None  # this machine's library, if built
    assert m["quantization"]["method"] == (recipe.KERNELS_METHOD if kernels else recipe.LOSSLESS_METHOD)
    assert m["quantization"]["weights_bit_exact"] is True and m["quantization"]["requantized"]["matmuls"] == 0
    assert m["source"]["file"] is None and m["source"]["kind"] == "random-init"
    assert m["shapes"] == {
        "num_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "hidden_size": 64,
        "intermediate_size": 128,
        "vocab_size": 49152,
        "context_window": 512,
        "tie_word_embeddings": True,
        "rope_theta": 100000.0,
    }
    assert m["special_tokens"]["eos_token_ids"] == [2, 0] and m["special_tokens"]["bos_token_id"] == 1
    assert m["special_tokens"]["tokenizer_adds_bos"] is False
    assert m["variant"] == "exact"  # its own GGUF's blocks, SmolLM2's variants
    # qkv, o, gate_up, down per layer; with our kernels the tied Q8_0 head too
    assert m["onnx"]["op_counts"]["MatMulGguf" if kernels else "MatMulNBits"] == 2 * 4 + kernels
    assert m["onnx"]["op_counts"][model_kernels.ATTENTION_OP_TYPE if kernels else "GroupQueryAttention"] == 2
    assert model_kernels.attention_op_type(m) == (model_kernels.ATTENTION_OP_TYPE if kernels else "GroupQueryAttention")
    assert list(m["onnx"]["transformations"]) == ["export", "norms", "attention", "mlp", "lossless", "head"]
    assert m["onnx_sha256"] == sha256_file(tiny_dir / md.MODEL_FILE)
    assert m["onnx"]["external_data"] == md.WEIGHTS_FILE
    assert m["files"][md.WEIGHTS_FILE]["sha256"] == sha256_file(tiny_dir / md.WEIGHTS_FILE)
    assert set(m["files"]) == {
        md.MODEL_FILE,
        md.WEIGHTS_FILE,  # the initializers, mapped from disk
        md.TOKENIZER_FILE,
        md.CONFIG_FILE,
        md.GENERATION_CONFIG_FILE,
        md.CHAT_TEMPLATE_FILE,
    }
    assert set(m["build_seconds"]) == {"check", "convert", "export", "transform", "verify"}


def open_session(model_dir: Path) -> ort.InferenceSession:
    """A session over a built model, with our kernel library when the model was built with it."""
    options = ort.SessionOptions()
    model_kernels.register_beside(options, model_dir / md.MODEL_FILE)
    return ort.InferenceSession(str(model_dir / md.MODEL_FILE), options, providers=["CPUExecutionProvider"])


def test_manifest_names_the_session_inputs_and_outputs(tiny_dir):
    m = read_manifest(tiny_dir)
    session = open_session(tiny_dir)
    assert [i["name"] for i in m["onnx"]["inputs"]] == [i.name for i in session.get_inputs()]
    assert [o["name"] for o in m["onnx"]["outputs"]] == [o.name for o in session.get_outputs()]
    past = [f"past_key_values.{i}.{kv}" for i in range(2) for kv in ("key", "value")]
    assert [i["name"] for i in m["onnx"]["inputs"]] == ["input_ids", "attention_mask", "position_ids", *past, "logits_to_keep"]
    assert [o["name"] for o in m["onnx"]["outputs"]] == ["logits", *(p.replace("past_key_values", "present") for p in past)]
    assert m["onnx"]["inputs"][3]["shape"] == ["batch_size", 2, "past_sequence_length", 16]


def test_same_seed_gives_the_same_model_ids_in_logits_out(tiny_dir):
    session = open_session(tiny_dir)
    feed = {
        "input_ids": np.array([[504, 3575]], dtype=np.int64),
        "attention_mask": np.ones((1, 2), dtype=np.int64),
        "position_ids": np.array([[0, 1]], dtype=np.int64),
        "logits_to_keep": np.array(0, dtype=np.int64),
        **{i.name: np.zeros((1, 2, 0, 16), dtype=np.float32) for i in session.get_inputs() if i.name.startswith("past")},
    }
    logits = session.run(["logits"], feed)[0]
    assert logits.shape == (1, 2, 49152) and np.isfinite(logits).all()


def test_second_build_is_skipped(tiny_dir):
    before = (tiny_dir / md.MANIFEST_FILE).read_bytes()
    inode = (tiny_dir / md.MODEL_FILE).stat().st_ino
    progress = RecordingProgress()
    assert build_tiny_model(tiny_dir, progress=progress) == tiny_dir
    assert progress.started == ["check the source and the model directory"]
    assert any(msg.endswith("up to date") for msg in progress.messages)
    assert (tiny_dir / md.MANIFEST_FILE).read_bytes() == before
    assert (tiny_dir / md.MODEL_FILE).stat().st_ino == inode


def test_a_model_built_as_another_variant_is_out_of_date(tiny_dir):
    from inference.modelbuild.pipeline import check_model
    from inference.modelbuild.tiny import RandomSource

    info = RandomSource(0).describe()
    assert check_model(tiny_dir, info, "exact").up_to_date
    status = check_model(tiny_dir, info, "fast")
    assert status.reasons == ("variant exact != fast",) and status.intact


def test_an_unknown_variant_is_refused(tmp_path):
    from inference.modelbuild import BuildError, inspect_model

    with pytest.raises(BuildError, match="unknown variant 'quick'"):
        inspect_model(tmp_path / "model", variant="quick")


def test_damaged_model_is_rebuilt(tiny_dir, tmp_path):
    target = tmp_path / "tiny"
    shutil.copytree(tiny_dir, target)
    with open(target / md.MODEL_FILE, "r+b") as f:
        f.seek(1000)
        f.write(b"\0garbage\0")
    progress = RecordingProgress()
    build_tiny_model(target, progress=progress)
    assert any("model.onnx does not match its recorded sha256" in msg for msg in progress.messages)
    assert len(progress.started) == 6
    m = read_manifest(target)
    assert m["onnx_sha256"] == sha256_file(target / md.MODEL_FILE)
    assert m["onnx_sha256"] == read_manifest(tiny_dir)["onnx_sha256"]  # the build is reproducible


def test_weights_beside_the_graph_are_checked_too(tiny_dir, tmp_path):
    """model.onnx.data is part of the model: changed or gone, the model is damaged (and rebuilt)."""
    from inference.modelbuild.pipeline import check_model
    from inference.modelbuild.tiny import RandomSource

    info = RandomSource(0).describe()
    target = tmp_path / "tiny"
    shutil.copytree(tiny_dir, target)
    with open(target / md.WEIGHTS_FILE, "r+b") as f:
        f.seek(100)
        f.write(b"\xff")
    status = check_model(target, info, "exact")
    assert not status.intact and status.reasons == (f"{md.WEIGHTS_FILE} does not match its recorded sha256",)
    (target / md.WEIGHTS_FILE).unlink()
    status = check_model(target, info, "exact")
    assert not status.intact and status.reasons == (f"{md.WEIGHTS_FILE} missing",)


def test_another_seed_is_another_source(tiny_dir):
    from inference.modelbuild.tiny import RandomSource

    assert RandomSource(1).describe()["sha256"] != read_manifest(tiny_dir)["source"]["sha256"]


def _fail_at_verify(monkeypatch):
    def verify_onnx(*args, **kwargs):
        raise RuntimeError("injected failure")

    monkeypatch.setattr(steps, "verify_onnx", verify_onnx)


def _leftovers(parent: Path, name: str) -> list[Path]:
    return list(parent.glob(f".{name}.building-*"))


def test_failed_build_leaves_no_model_dir(monkeypatch, tmp_path):
    _fail_at_verify(monkeypatch)  # after model.onnx is written into the staging dir
    target = tmp_path / "tiny"
    with pytest.raises(RuntimeError, match="injected failure"):
        build_tiny_model(target, progress=RecordingProgress())
    assert not target.exists()
    assert _leftovers(tmp_path, "tiny") == []


def test_failed_rebuild_keeps_the_previous_model(monkeypatch, tiny_dir, tmp_path):
    target = tmp_path / "tiny"
    shutil.copytree(tiny_dir, target)
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    _fail_at_verify(monkeypatch)
    with pytest.raises(RuntimeError, match="injected failure"):
        build_tiny_model(target, force=True, progress=RecordingProgress())
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert _leftovers(tmp_path, "tiny") == []


def test_leftovers_of_a_killed_build_are_cleared(tiny_dir, tmp_path):
    shutil.copytree(tiny_dir, tmp_path / "tiny")
    leftover = tmp_path / ".tiny.building-dead"
    (leftover / "model").mkdir(parents=True)
    build_tiny_model(tmp_path / "tiny", progress=RecordingProgress())
    assert not leftover.exists()


def test_serving_only_install_uses_an_intact_model_as_it_is(monkeypatch, tiny_dir, tmp_path):
    from inference.modelbuild import recipe

    target = tmp_path / "tiny"
    shutil.copytree(tiny_dir, target)
    manifest = json.loads((target / md.MANIFEST_FILE).read_text())
    manifest["tools"]["torch"] = "0.0"  # built elsewhere, with other tools
    (target / md.MANIFEST_FILE).write_text(json.dumps(manifest))
    monkeypatch.setattr(recipe, "missing_build_tools", lambda: ["torch"])
    progress = RecordingProgress()
    assert build_tiny_model(target, progress=progress) == target
    assert any("using the model as it is" in msg and "torch 0.0 ->" in msg for msg in progress.messages)
    assert len(progress.started) == 1


def test_serving_only_install_without_a_model_is_an_error(monkeypatch, tmp_path):
    from inference.modelbuild import BuildError, recipe

    monkeypatch.setattr(recipe, "missing_build_tools", lambda: ["torch"])
    with pytest.raises(BuildError, match="build tools not installed: torch"):
        build_tiny_model(tmp_path / "tiny", progress=RecordingProgress())
    assert not (tmp_path / "tiny").exists()
