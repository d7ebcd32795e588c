"""The tiny model built with our kernel library (every kernel: Q4_1 and Q8_0, exact and fast), without it
(the library hidden: ONNX Runtime's MatMulNBits graph), and what each build records and says."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inference import model_dir as md
from inference import model_kernels
from inference.engine import CPU
from inference.kernels.library import ENV_LIBRARY
from inference.modelbuild import Progress, build_tiny_model, quality, read_manifest
from inference.modelbuild.pipeline import check_model
from inference.modelbuild.tiny import RandomSource
from inference.models import SMOLLM2
from inference.runtime import load_runtime

from .conftest import RecordingProgress

LIBRARY = model_kernels.library_for(SMOLLM2.recipe.kernel_formats)  # what a SmolLM2 build records here
pytestmark = pytest.mark.skipif(LIBRARY["library"] is None, reason=f"the kernel library is not built here: {LIBRARY.get('why')}")

PROMPT = list(range(300, 340))  # 40 token ids: a prefill through every layer


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Path]:
    """The tiny model as ``exact`` and ``fast`` with the library, and as both with it hidden."""
    root = tmp_path_factory.mktemp("kernels")
    built = {f"{v} kernels": build_tiny_model(root / f"{v}-kernels", variant=v, progress=Progress()) for v in ("exact", "fast")}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_LIBRARY, str(root / "hidden" / "libplayground_kernels.so"))
        for v in ("exact", "fast"):
            built[f"{v} MatMulNBits"] = build_tiny_model(root / f"{v}-matmulnbits", variant=v, progress=Progress())
    return built


def logits(model_dir: Path) -> np.ndarray:
    """Every position's logits ``[40, vocab]`` after :data:`PROMPT`, from a session the model's manifest set up."""
    session = quality.open_session(model_dir / md.MODEL_FILE, threads=1)
    return quality.step(session, PROMPT, quality.empty_past(session))[0]


def test_the_two_variants_run_every_kernel(builds):
    modes = {}
    for variant in ("exact", "fast"):
        m = read_manifest(builds[f"{variant} kernels"])
        recorded = {k: LIBRARY[k] for k in ("library", "isa", "formats")}
        assert m["kernels"] == {**recorded, "ops": 9, "attention_ops": 2}  # 4 per layer and the tied head; attention
        ops = m["onnx"]["op_counts"]
        assert ops[model_kernels.ATTENTION_OP_TYPE] == 2 and "GroupQueryAttention" not in ops
        assert m["onnx"]["op_counts"][model_kernels.OP_TYPE] == 9 and "MatMulNBits" not in m["onnx"]["op_counts"]
        assert m["onnx"]["opsets"][model_kernels.DOMAIN] == model_kernels.OPSET_VERSION
        modes |= m["quantization"]["matmul_gguf"]
    assert modes == {"Q4_1 exact": 8, "Q8_0 exact": 1, "Q4_1 fast": 8, "Q8_0 fast": 1}


def test_exact_kernels_compute_what_the_matmulnbits_build_computes(builds):
    ours, theirs = logits(builds["exact kernels"]), logits(builds["exact MatMulNBits"])
    assert np.abs(ours - theirs).max() <= 1e-5 * np.abs(theirs).max()  # both fp32 products of the same weights
    assert (ours.argmax(-1) == theirs.argmax(-1)).all()


def test_fast_kernels_stay_close_and_differ_from_exact(builds):
    exact, fast = logits(builds["exact kernels"]), logits(builds["fast kernels"])
    scores = quality.divergence(exact, fast)
    assert scores["agreement"] >= 0.95 and scores["mean_kl"] < 1e-3
    assert np.abs(fast - exact).max() > 1e-5 * np.abs(exact).max()  # int8 activations did run


def test_without_the_library_the_build_is_matmulnbits_and_says_why(builds):
    m = read_manifest(builds["exact MatMulNBits"])
    assert m["kernels"] == {"library": None, "why": f"{ENV_LIBRARY} names a missing file"}
    assert model_kernels.OP_TYPE not in m["onnx"]["op_counts"] and m["onnx"]["op_counts"]["MatMulNBits"] == 8
    assert m["onnx"]["op_counts"]["GroupQueryAttention"] == 2  # ONNX Runtime's attention too
    assert model_kernels.serving_text(m) == "ONNX Runtime MatMulNBits"
    assert load_runtime(builds["exact MatMulNBits"], (CPU,), 1).info.kernels == "ONNX Runtime MatMulNBits"


def test_the_runtime_says_which_kernels_serve(builds):
    info = load_runtime(builds["exact kernels"], (CPU,), 1).info
    assert info.kernels == f"our kernels ({LIBRARY['isa']})" == info.to_dict()["kernels"]


def test_a_change_of_library_rebuilds_and_says_so(builds, monkeypatch):
    info = RandomSource(0).describe()
    assert check_model(builds["exact kernels"], info, "exact").up_to_date
    assert check_model(builds["exact MatMulNBits"], info, "exact").reasons == (f"kernel library none -> {LIBRARY['library']}",)
    newer = {**LIBRARY, "library": "99.0"}
    assert check_model(builds["exact kernels"], info, "exact", kernels=newer).reasons == (
        f"kernel library {LIBRARY['library']} -> 99.0",
    )
    monkeypatch.setenv(ENV_LIBRARY, "/nonexistent/libplayground_kernels.so")
    status = check_model(builds["exact kernels"], info, "exact")
    assert status.reasons == (f"kernel library {LIBRARY['library']} -> none ({ENV_LIBRARY} names a missing file)",)
    assert status.intact


def test_a_kernels_model_without_the_library_fails_with_a_clear_message(builds, monkeypatch):
    monkeypatch.setenv(ENV_LIBRARY, "/nonexistent/libplayground_kernels.so")
    with pytest.raises(model_kernels.KernelLibraryMissingError, match="built with our kernels .* not available here"):
        load_runtime(builds["exact kernels"], (CPU,), 1)
    with pytest.raises(model_kernels.KernelLibraryMissingError, match=str(builds["fast kernels"])):
        quality.open_session(builds["fast kernels"] / md.MODEL_FILE)


def test_a_rebuild_after_the_library_went_is_matmulnbits(builds, tmp_path, monkeypatch):
    import shutil

    target = tmp_path / "tiny"
    shutil.copytree(builds["exact kernels"], target)
    monkeypatch.setenv(ENV_LIBRARY, "/nonexistent/libplayground_kernels.so")
    progress = RecordingProgress()
    build_tiny_model(target, variant="exact", progress=progress)
    assert any("kernel library" in message and "-> none" in message for message in progress.messages)
    assert read_manifest(target)["kernels"]["library"] is None
    assert read_manifest(target)["onnx_sha256"] == read_manifest(builds["exact MatMulNBits"])["onnx_sha256"]
