"""The real SmolLM2 built with our kernels: the fp32 export's numbers, and greedy text identical to the
MatMulNBits build of the same variant (built here with the library hidden, beside the served model).

The served build (``ensure_model()``) is the kernels one wherever the library is built; the
MatMulNBits twin and the fp32 reference export are built once into ``.models/`` (about a minute
each) and reused.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from inference import model_dir as md
from inference import model_kernels
from inference.chat_template import ChatPrompt, ChatTemplate
from inference.engine import CPU, Decoder
from inference.kernels.library import ENV_LIBRARY
from inference.modelbuild import ensure_model, quality, read_manifest
from inference.modelbuild.progress import Progress
from inference.modelbuild.reference import export_reference
from inference.models import SMOLLM2
from inference.runtime import load_runtime

LIBRARY = model_kernels.library_for(SMOLLM2.recipe.kernel_formats)  # what a SmolLM2 build records here
pytestmark = [
    pytest.mark.real_model,
    pytest.mark.skipif(LIBRARY["library"] is None, reason=f"the kernel library is not built here: {LIBRARY.get('why')}"),
]

MATMULNBITS_DIR = md.MODELS_ROOT / "smollm2-135m-instruct-matmulnbits"  # git-ignored, beside the served build
GREEDY_TOKENS = 200
CHAT_PROMPT = "What is the capital of France?"


@pytest.fixture(scope="module")
def kernels_dir() -> Path:
    model_dir = ensure_model(progress=Progress())
    assert model_kernels.uses_kernels(read_manifest(model_dir))
    return model_dir


@pytest.fixture(scope="module")
def matmulnbits_dir() -> Path:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_LIBRARY, str(MATMULNBITS_DIR / "no-library" / "libplayground_kernels.so"))
        model_dir = ensure_model(MATMULNBITS_DIR, progress=Progress())
    assert read_manifest(model_dir)["kernels"]["library"] is None
    return model_dir


@pytest.fixture(scope="module")
def tokenizer(kernels_dir) -> Tokenizer:
    return Tokenizer.from_file(str(kernels_dir / md.TOKENIZER_FILE))


def test_the_manifest_records_the_kernels(kernels_dir):
    m = read_manifest(kernels_dir)
    recorded = {k: LIBRARY[k] for k in ("library", "isa", "formats")}
    assert m["kernels"] == {**recorded, "ops": 30 * 4 + 1, "attention_ops": 30}  # qkv, o, gate_up, down a layer; the head
    ops = m["onnx"]["op_counts"]
    assert ops[model_kernels.ATTENTION_OP_TYPE] == 30 and "GroupQueryAttention" not in ops
    assert ops[model_kernels.OP_TYPE] == 121 and "MatMulNBits" not in ops and "MatMul" not in ops  # no offset path
    assert m["quantization"]["matmul_gguf"] == {"Q4_1 exact": 120, "Q8_0 exact": 1}
    # the embedding reads the Q8_0 table's 8-bit codes (recipe 6): no fp32 table, no plain Gather
    assert ops.get("GatherBlockQuantized") == 1 and "Gather" not in ops
    assert m["quantization"]["weights_left"] == {}


def test_exact_kernels_compute_what_the_fp32_export_computes(kernels_dir, tokenizer):
    """The quality text (263 positions, one prefill): top-1 agreement 1.000, mean KL ≤ 1e-6."""
    text = [SMOLLM2.recipe.quality_text_start] + tokenizer.encode(quality.MIXED_TEXT, add_special_tokens=False).ids
    logits = {}
    for name, path in (("ours", kernels_dir / md.MODEL_FILE), ("fp32", export_reference())):
        session = quality.open_session(path)
        logits[name] = quality.step(session, text, quality.empty_past(session))[0]  # [263, V]
    ref, got = quality.log_softmax(logits["fp32"]), quality.log_softmax(logits["ours"])
    kl = (np.exp(ref) * (ref - got)).sum(axis=-1)  # [263]
    assert (logits["ours"].argmax(-1) == logits["fp32"].argmax(-1)).all()
    assert kl.mean() <= 1e-6, f"mean KL {kl.mean():.3g}, max {kl.max():.3g}"


def reference_prompts(tokenizer: Tokenizer, kernels_dir: Path) -> dict[str, list[int]]:
    """The quality script's greedy prompt after each of its starts, and the chat question in the chat template."""
    prompt = tokenizer.encode(quality.GREEDY_PROMPT, add_special_tokens=False).ids
    prompts = {start: [*ids, *prompt] for start, ids in SMOLLM2.recipe.quality_prompt_starts.items()}
    template = ChatTemplate.from_file(kernels_dir / md.CHAT_TEMPLATE_FILE)
    prompts["chat"] = tokenizer.encode(template.render(ChatPrompt.single_turn(CHAT_PROMPT)), add_special_tokens=False).ids
    return prompts


def greedy(decoder: Decoder, ids: list[int], n: int) -> list[int]:
    """``n`` greedy tokens after ``ids`` through the engine (its cache bound in place), end tokens included."""
    state = decoder.new_state()
    logits, out = state.append_tokens(ids)[0], []  # [V]
    for _ in range(n):
        out.append(int(logits.argmax()))
        logits = state.append_tokens([out[-1]])[0]
    return out


def test_greedy_is_identical_to_the_matmulnbits_build_for_200_tokens(kernels_dir, matmulnbits_dir, tokenizer):
    ours = load_runtime(kernels_dir, (CPU,), 2).decoder
    theirs = load_runtime(matmulnbits_dir, (CPU,), 2).decoder
    for name, ids in reference_prompts(tokenizer, kernels_dir).items():
        mine, other = greedy(ours, ids, GREEDY_TOKENS), greedy(theirs, ids, GREEDY_TOKENS)
        first = next((i for i, (a, b) in enumerate(zip(mine, other)) if a != b), None)
        assert first is None, f"{name}: the builds part at token {first}: {tokenizer.decode(mine[: first + 1])!r}"
