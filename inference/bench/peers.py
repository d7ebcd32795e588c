"""The peers' models: the one the onnxruntime-genai peer of ``python -m inference.bench`` runs, built
by genai's own builder, and llama.cpp opened on the very GGUF our model is built from
(:class:`LlamaCppModel`, read by the bench and by ``inference.modelbuild.quality --llama-cpp``).

    python -m inference.bench.peers [--out .models/peers/genai-int4]

genai's builder (``onnxruntime_genai.models.builder``, the ``peers`` extra) makes an int4 model
(``-p int4 -e cpu``: its own requantization, accuracy_level 4, fused attention, shared KV buffer)
from a transformers checkpoint; ours is the GGUF dequantized to fp32, which
``inference.modelbuild.reference``'s export writes into ``.models/fp32-reference/checkpoint``
(made here if missing, ~70 s). Two adjustments let genai 0.18's builder run with the transformers
our build pins (4.57): it imports two model classes that version does not have (never used for a
Llama model; stand-ins are registered), and it reads the RoPE settings from ``rope_scaling``, which
our checkpoint leaves null (a copy of the config names the default RoPE and its theta). Everything
goes into git-ignored folders; the result is a speed reference, not a quality one (its weights are
requantized).
"""

from __future__ import annotations

import argparse
import json
import runpy
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from inference.model_dir import MODELS_ROOT
from inference.modelbuild.reference import REFERENCE_DIR, export_reference
from inference.modelbuild.source import locate_gguf

DEFAULT_OUT = MODELS_ROOT / "peers" / "genai-int4"
MISSING_CLASSES = ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration")


def genai_checkpoint(work: Path) -> Path:
    """The fp32 checkpoint, linked into ``work`` with a config genai's builder can read."""
    export_reference(REFERENCE_DIR)
    checkpoint = REFERENCE_DIR / "checkpoint"
    work.mkdir(parents=True, exist_ok=True)
    for path in checkpoint.iterdir():
        link = work / path.name
        if path.name != "config.json" and not link.exists():
            link.symlink_to(path.resolve())
    config = json.loads((checkpoint / "config.json").read_text())
    if config.get("rope_scaling") is None:
        config["rope_scaling"] = {"rope_type": "default", "rope_theta": config["rope_theta"]}
    (work / "config.json").write_text(json.dumps(config, indent=2))
    return work


def build_genai_model(out: Path = DEFAULT_OUT) -> Path:
    """Run genai's builder into ``out`` unless a model is already there."""
    if (out / "genai_config.json").is_file():
        return out
    import transformers  # heavy (torch): imported only to build the peer

    for name in MISSING_CLASSES:
        try:  # (a lazy module may list a name in dir() that it then fails to import)
            getattr(transformers, name)
        except (AttributeError, ImportError):
            setattr(transformers, name, type(name, (), {}))
    checkpoint = genai_checkpoint(out.parent / f".{out.name}-checkpoint")
    argv = sys.argv
    sys.argv = [
        "builder",
        "-m",
        str(checkpoint),
        "-i",
        str(checkpoint),
        "-o",
        str(out),
        "-p",
        "int4",
        "-e",
        "cpu",
        "-c",
        str(out.parent / f".{out.name}-cache"),
    ]
    try:
        runpy.run_module("onnxruntime_genai.models.builder", run_name="__main__")
    finally:
        sys.argv = argv
        shutil.rmtree(out.parent / f".{out.name}-cache", ignore_errors=True)
    return out


class LlamaCppModel:
    """llama.cpp (``llama-cpp-python``, the ``peers`` extra: ImportError without it) on the GGUF our
    model is built from (``gguf``; default SmolLM2's), with ``threads`` threads and a context of
    ``context`` tokens."""

    def __init__(self, threads: int, context: int, gguf: Path | None = None) -> None:
        import llama_cpp  # optional and heavy (the peers extra): imported when a peer is opened

        self._logits_ith = llama_cpp.llama_get_logits_ith
        self.llm = llama_cpp.Llama(
            model_path=str(gguf or locate_gguf()),
            n_threads=threads,
            n_threads_batch=threads,
            n_ctx=context,
            n_batch=512,
            verbose=False,
        )

    def last_logits(self) -> np.ndarray:
        """[V]: the logits the last ``llm.eval`` left for its last token (a view: copy to keep)."""
        return np.ctypeslib.as_array(self._logits_ith(self.llm.ctx, -1), shape=(self.llm.n_vocab(),))

    def greedy_tokens_per_s(self, prompt: list[int], tokens: int) -> float:
        """Decode speed after ``prompt`` (token ids): ``tokens`` greedy tokens, one ``eval`` each."""
        self.llm.reset()
        self.llm.eval(prompt)
        began = time.perf_counter()
        for _ in range(tokens):
            self.llm.eval([int(np.argmax(self.last_logits()))])
        return tokens / (time.perf_counter() - began)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inference.bench.peers", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    print(build_genai_model(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
