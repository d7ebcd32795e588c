"""The device check (inference/bench/device_check.py, scripts/device-check) run where no GPU is:
its measuring and reporting steps on the CPU provider over the tiny model, its clear failure on
CUDA, and the environment switch it and scripts/env.sh use (scripts/onnxruntime-provider)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from inference.bench import device_check
from inference.model_dir import REPO_ROOT
from inference.modelbuild import Progress, build_tiny_model, default_tiny_dir


def test_the_cpu_run_reports_placement_fidelity_and_speed(tmp_path, capsys):
    cuda_dir = build_tiny_model(tmp_path / "tiny-cuda", variant="cuda", progress=Progress())
    status = device_check.main(
        [
            "--model",
            str(cuda_dir),
            "--reference",
            str(default_tiny_dir()),
            "--provider",
            "cpu",
            "--tokens",
            "6",
            "--speed-steps",
            "2",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert report["placement"]["nodes"] > 0 and report["placement"]["elsewhere"] == []
    assert set(report["fidelity"]["prompts"]) == {"greedy", "text"} and report["fidelity"]["tokens"] == 6
    assert {f"decode_tokens_per_s_batch_{b}" for b in device_check.BATCHES} <= set(report["speed"])
    assert status == (0 if all(report["passed"].values()) else 1)


def test_cuda_where_there_is_no_gpu_fails_at_once_with_a_reason():
    start = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "inference.bench.device_check",
            "--model",
            str(default_tiny_dir()),
            "--reference",
            str(default_tiny_dir()),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    report = json.loads(result.stdout)
    assert result.returncode == 2 and "CUDAExecutionProvider" in report["error"]
    assert "placement" not in report and time.monotonic() - start < 120


def test_the_provider_switch_installs_the_cuda_extra_in_place_of_onnxruntime():
    script = REPO_ROOT / "scripts" / "onnxruntime-provider"
    lines = subprocess.run([script, "--dry-run", sys.executable, "cuda"], capture_output=True, text=True, check=True).stdout
    uninstall, install = lines.strip().splitlines()
    assert uninstall.endswith("pip uninstall --quiet --yes onnxruntime onnxruntime-gpu")
    assert "onnxruntime-gpu>=" in install and "nvidia-cudnn-cu12" in install and " onnxruntime>=" not in install
    bad = subprocess.run([script, sys.executable, "gpu"], capture_output=True, text=True)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_the_image_takes_the_providers_as_a_build_argument():
    dockerfile = (REPO_ROOT / "docker" / "Dockerfile").read_text()
    assert dockerfile.count("ARG PLAYGROUND_EXECUTION_PROVIDERS=CPUExecutionProvider") == 2  # builder and runtime stages
    assert "PLAYGROUND_EXECUTION_PROVIDERS=$PLAYGROUND_EXECUTION_PROVIDERS" in dockerfile
    assert "scripts/onnxruntime-provider /opt/venv/bin/python cuda" in dockerfile
