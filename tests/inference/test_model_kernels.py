"""What a manifest's ``kernels`` section means: the words shown, the rebuild reasons, the registration."""

from __future__ import annotations

import onnxruntime as ort
import pytest

from inference import model_kernels as mk
from inference.kernels.library import ENV_LIBRARY

KERNELS = {"kernels": {"library": "1.0.0", "isa": "avx2", "formats": ["Q4_1", "Q8_0"], "ops": 121}}
NBITS = {"kernels": {"library": None, "why": "not built"}, "onnx": {"op_counts": {"MatMulNBits": 120, "MatMul": 241}}}
OLDER = {"onnx": {"op_counts": {"MatMulNBits": 120}}}  # built before the kernels: no section
FP32 = {"kernels": {"library": "1.0.0", "isa": "avx2", "ops": 0}, "onnx": {"op_counts": {"MatMul": 4}}}


def test_the_words_say_which_kernels_serve():
    assert mk.serving_text(KERNELS) == "our kernels (avx2)"
    assert mk.serving_text(NBITS) == mk.serving_text(OLDER) == "ONNX Runtime MatMulNBits"
    assert mk.serving_text(FP32) == "ONNX Runtime MatMul (fp32)"  # the library was there, no node used it
    assert [mk.uses_kernels(m) for m in (KERNELS, NBITS, OLDER, FP32)] == [True, False, False, False]


def test_a_library_that_came_went_or_changed_is_a_reason_to_rebuild():
    now = {"library": "1.0.0", "isa": "avx2", "formats": ["Q4_1", "Q8_0"]}
    none = {"library": None, "why": "not built"}
    assert mk.rebuild_reason(KERNELS, now) is None and mk.rebuild_reason(NBITS, none) is None
    assert mk.rebuild_reason(OLDER, none) is None  # an older build is a MatMulNBits one
    assert mk.rebuild_reason(OLDER, now) == "kernel library none -> 1.0.0"
    assert mk.rebuild_reason(KERNELS, {**now, "library": "1.1.0"}) == "kernel library 1.0.0 -> 1.1.0"
    assert mk.rebuild_reason(KERNELS, none) == "kernel library 1.0.0 -> none (not built)"


def test_a_model_whose_build_uses_none_of_the_formats_records_no_library():
    found = mk.library_for(())
    assert found["library"] is None and "why" in found
    assert mk.rebuild_reason(OLDER, found) is None  # so the library coming or going rebuilds nothing


def test_a_kernels_model_where_the_library_is_missing_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_LIBRARY, str(tmp_path / "libplayground_kernels.so"))
    with pytest.raises(mk.KernelLibraryMissingError, match=f"somewhere/model was built with our kernels .*{ENV_LIBRARY}"):
        mk.register(ort.SessionOptions(), KERNELS, "somewhere/model")
    mk.register(ort.SessionOptions(), NBITS, "somewhere/model")  # a MatMulNBits model needs nothing
