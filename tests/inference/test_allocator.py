"""The worker keeps its freed heap: sampling a token no longer touches fresh pages every step."""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from inference.allocator import keep_freed_memory

REPO = Path(__file__).resolve().parents[2]
glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")

FAULTS_PER_STEP = textwrap.dedent(
    """
    import resource, sys
    import numpy as np
    from inference.allocator import keep_freed_memory
    from inference.sampling.bench import fake_logits
    from inference.sampling.chain import SamplerChain
    from inference.sampling.params import SamplingParams

    raised = keep_freed_memory() if sys.argv[1] == "raise" else False
    rng = np.random.default_rng(0)
    logits = [fake_logits(rng, 49152) for _ in range(4)]
    chain, draws, history = SamplerChain(SamplingParams(temperature=0.9, top_p=0.95)), np.random.default_rng(1), [1, 2, 3]
    for i in range(10):
        chain.step(logits[i % 4], history, draws, top_n=20)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for i in range(100):
        chain.step(logits[i % 4], history, draws, top_n=20)
    print(raised, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 100)
    """
)


def faults_per_step(mode: str) -> tuple[bool, float]:
    """A fresh process (the thresholds are per process) samples 100 tokens of a 49k vocabulary."""
    out = subprocess.run(
        [sys.executable, "-c", FAULTS_PER_STEP, mode], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    return out[0] == "True", float(out[1])


@glibc_only
def test_the_thresholds_are_taken_once_per_process():
    assert keep_freed_memory() is True
    assert keep_freed_memory() is True  # a second call changes nothing


@glibc_only
def test_sampling_a_token_touches_almost_no_fresh_pages_once_raised():
    raised, faults = faults_per_step("raise")
    assert raised
    # one float64 copy of the logits alone is 96 pages; without the thresholds glibc trims and
    # re-faults the heap every step (about 190 faults per token on the shared machine)
    assert faults < 40, faults


def test_loading_a_model_raises_them(tiny_runtime):
    from inference.modelbuild import default_tiny_dir

    code = "import sys; from pathlib import Path; import inference.allocator as a; from inference.runtime import load_runtime; "
    code += "load_runtime(Path(sys.argv[1])); print(a._applied)"
    out = subprocess.run(
        [sys.executable, "-c", code, str(default_tiny_dir())], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == str(platform.libc_ver()[0] == "glibc")


LOAD_GROWTH = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from inference.runtime import load_runtime

    def resident_bytes():
        return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) * 1024

    before = resident_bytes()
    load_runtime(Path(sys.argv[1]))
    print(resident_bytes() - before)
    """
)


@glibc_only
@pytest.mark.gemma_model
def test_a_load_leaves_the_weights_resident_once():
    """Gemma 3 270M's weights (503 MB in model.onnx.data) are mapped by ONNX Runtime, repacked by our
    kernels, which hand the mapped pages back, and what the load freed goes back to the system: a
    loaded Gemma adds well under its weights' size (it added 1.3× them before: the initializers on
    the heap beside the repacked copy, and the load's freed copies kept)."""
    from inference import model_dir as md
    from inference.models import GEMMA

    gemma_dir = md.MODELS_ROOT / GEMMA.dir_name
    if not (gemma_dir / md.MANIFEST_FILE).is_file():
        pytest.skip("Gemma is not built: python -m inference.modelbuild --model gemma-3-270m")
    weights = (gemma_dir / md.WEIGHTS_FILE).stat().st_size
    out = subprocess.run(
        [sys.executable, "-c", LOAD_GROWTH, str(gemma_dir)], cwd=REPO, capture_output=True, text=True, check=True, timeout=300
    )
    added = int(out.stdout.split()[-1])
    assert added < 0.75 * weights, f"a load added {added / 2**20:.0f} MiB for {weights / 2**20:.0f} MiB of weights"
