"""The command line shared by ``python -m inference.modelbuild`` and ``python manage.py build_model``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from ..model_dir import DEFAULT_MODEL_DIR_NAME, MODEL_DIR_ENV, MODELS_ROOT, default_model_dir
from ..models import DEFAULT_MODEL, entry_for, served_entries
from .pipeline import BuildError, ensure_model, inspect_model
from .progress import ConsoleProgress
from .source import SourceNotFoundError, source_for
from .tiny import TINY_LLAMA, default_tiny_dir

DESCRIPTION = (
    "Build the ONNX decoder (with KV cache) of a model from the GGUF its package ships ("
    + "; ".join(f"{e.id}: {e.source.package}" for e in served_entries())
    + "), and write its manifest. Skips the build when the model directory is up to date."
)


def model_choices() -> list[str]:
    """What ``--model`` takes: the served models' ids."""
    return sorted(e.id for e in served_entries())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options both entry points share (verbosity is each entry point's own)."""
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help=f"where to build (default: ${MODEL_DIR_ENV}, else .models/{DEFAULT_MODEL_DIR_NAME})",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    parser.add_argument("--dry-run", action="store_true", help="say whether a build is needed; build nothing")
    parser.add_argument(
        "--variant",
        choices=sorted({v for e in served_entries() for v in e.recipe.variants}),
        default=None,
        help=f"how the 4-bit and 8-bit kernels compute (default: {entry_for(DEFAULT_MODEL).recipe.default_variant}, which computes what the "
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
    """Check or build ``model`` (a registered model's id); returns the exit status (0 done or up
    to date, 1 failed)."""
    stream = stream or sys.stderr
    if model_dir is None:
        model_dir = default_tiny_dir() if tiny else model_dir_for(model)
    try:
        source = source_for(TINY_LLAMA if tiny else model)
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
    return default_model_dir() if model == DEFAULT_MODEL else MODELS_ROOT / entry_for(model).dir_name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inference.modelbuild", description=DESCRIPTION)
    add_arguments(parser)
    parser.add_argument(
        "--model", choices=model_choices(), default=DEFAULT_MODEL, help=f"which model to build (default: {DEFAULT_MODEL})"
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
