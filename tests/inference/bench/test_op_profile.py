"""``python -m inference.bench.op_profile`` profiles real decode steps of a build, batch by batch."""

from __future__ import annotations

from inference.bench import op_profile
from inference.modelbuild import default_tiny_dir


def test_it_reports_each_batchs_step_by_operator(tiny_runtime):
    report = op_profile.main(
        ["--model-dir", str(default_tiny_dir()), "--batches", "1,3", "--context", "8", "--steps", "3", "--threads", "1"]
    )
    assert set(report["batches"]) == {"1", "3"}
    for batch in report["batches"].values():
        assert batch["step_ms"] > 0
        assert {"GroupQueryAttention", "GroupAttention"} & set(batch["ops"])  # built the same way as the real one
        assert 0 < sum(op["share"] for op in batch["ops"].values()) <= 1.0
