"""Check a model directory against the recipe, and (re)build it atomically when it does not match.

A build runs in a temporary directory beside the target and is renamed into place only once the
model has been verified and its manifest written, so a half-built directory is never taken for a
model. A lock file beside the target serialises concurrent builders (e.g. a server and a test run).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from .. import model_dir as md
from .. import model_kernels
from ..models import DEFAULT_MODEL, ModelEntry, entry_for
from . import cuda_variant, recipe, steps  # cheap: each step imports its tools as it runs
from .progress import ConsoleProgress, Progress, StepTimer
from .source import LICENSE_TERMS_FILE, NOTICE_FILE, Source, SourceNotFoundError, sha256_file, source_for

BUILD_STEPS = 6  # check, convert, export, transform, verify, install

# Copied from the transformers checkpoint into the model directory, when present (the last two: the
# license terms and notice a source whose terms require them to travel with the weights writes).
CHECKPOINT_FILES = (
    md.TOKENIZER_FILE,
    md.CONFIG_FILE,
    md.GENERATION_CONFIG_FILE,
    md.CHAT_TEMPLATE_FILE,
    LICENSE_TERMS_FILE,
    NOTICE_FILE,
)


class BuildError(RuntimeError):
    """The model cannot be built here (missing tools or source), or a step failed."""


@dataclass(frozen=True)
class ModelStatus:
    """How a model directory compares with what the recipe would build now."""

    model_dir: Path
    reasons: tuple[str, ...]  # why it would be (re)built; empty when up to date
    intact: bool  # a manifest, and every file it lists with its recorded hash: servable as is

    @property
    def up_to_date(self) -> bool:
        return not self.reasons


def check_model(
    model_dir: Path,
    source_info: dict[str, Any] | None,
    variant: str | None = None,
    model: ModelEntry | None = None,
    kernels: dict[str, Any] | None = None,
) -> ModelStatus:
    """Compare ``model_dir`` with ``model``'s recipe (default: the default model's), the tools
    installed, ``source_info`` (None: unknown), the ``variant`` asked for (None for a source without
    GGUF blocks, which has no variants) and our kernel library (``kernels``: ``model_kernels.library_for``
    the model's formats, asked now by default): a library that came, went or changed version since
    the build rebuilds.

    Hashes every file the manifest lists (about 0.5 s for the real model).
    """
    try:
        manifest = md.read_manifest(model_dir)
    except md.ModelNotBuiltError:
        return ModelStatus(model_dir, ("not built yet",), intact=False)
    except (OSError, ValueError) as exc:
        return ModelStatus(model_dir, (f"unreadable manifest: {exc}",), intact=False)

    model = model or entry_for(DEFAULT_MODEL)
    recipe_version = model.recipe.recipe_version
    reasons: list[str] = []
    if manifest.get("recipe_version") != recipe_version:
        reasons.append(f"recipe version {manifest.get('recipe_version')} != {recipe_version}")
    if manifest.get("variant") != variant:
        reasons.append(f"variant {manifest.get('variant')} != {variant}")
    recorded = manifest.get("source", {}).get("sha256")
    if source_info is None:
        reasons.append("source not available to compare with")
    elif recorded != source_info["sha256"]:
        reasons.append(f"source sha256 {recorded} != {source_info['sha256']}")
    tools_then, tools_now = manifest.get("tools", {}), recipe.tool_versions()
    changed = sorted(k for k in tools_then.keys() | tools_now.keys() if tools_then.get(k) != tools_now.get(k))
    if changed:
        reasons.append("tool versions changed: " + ", ".join(f"{k} {tools_then.get(k)} -> {tools_now.get(k)}" for k in changed))
    kernels = _kernels_for(model, variant) if kernels is None else kernels
    kernels_changed = model_kernels.rebuild_reason(manifest, kernels)
    if kernels_changed:
        reasons.append(kernels_changed)

    damaged: list[str] = []
    files = manifest.get("files", {})
    if md.MODEL_FILE not in files:
        damaged.append(f"manifest lists no {md.MODEL_FILE}")
    for name, info in files.items():
        path = model_dir / name
        if not path.is_file():
            damaged.append(f"{name} missing")
        elif path.stat().st_size != info.get("size_bytes") or sha256_file(path) != info.get("sha256"):
            damaged.append(f"{name} does not match its recorded sha256")
    if manifest.get("onnx_sha256") != files.get(md.MODEL_FILE, {}).get("sha256"):
        damaged.append("onnx_sha256 disagrees with the file list")
    return ModelStatus(model_dir, tuple(reasons + damaged), intact=not damaged)


def inspect_model(model_dir: Path | None = None, source: Source | None = None, variant: str | None = None) -> ModelStatus:
    """The status of ``model_dir`` (default: the configured one) against ``source`` (default: the
    default model's packaged GGUF; ``variant``: default its recipe's default)."""
    model_dir = md.default_model_dir() if model_dir is None else Path(model_dir)
    source = source or source_for(DEFAULT_MODEL)
    try:
        info = source.describe()
    except SourceNotFoundError:
        info = None
    wanted = _variant_for(source, variant)
    return check_model(model_dir, info, wanted, source.entry, _kernels_for(source.entry, wanted))


def _kernels_for(model: ModelEntry, variant: str | None) -> dict[str, Any]:
    """Our kernel library as a build of ``model``'s ``variant`` uses it (none for the GPU variant)."""
    build = model.recipe
    return cuda_variant.kernels_for(build.variants.get(variant or "", {}), model_kernels.library_for(build.kernel_formats))


def _variant_for(source: Source, variant: str | None) -> str | None:
    """The variant a build of ``source`` records: the one asked for (checked against its model's
    recipe), else the default; None for a source without GGUF blocks."""
    plan = source.entry.recipe
    if variant is not None and variant not in plan.variants:
        raise BuildError(f"unknown variant {variant!r} for {source.entry.id}; choose one of {sorted(plan.variants)}")
    if source.gguf_weights is None:
        return None
    return variant or plan.default_variant


def ensure_model(
    model_dir: Path | None = None,
    progress: Progress | None = None,
    *,
    force: bool = False,
    source: Source | None = None,
    variant: str | None = None,
) -> Path:
    """Build the model into ``model_dir`` (default: the configured one) unless it is up to date.

    ``source``: default the default model's packaged GGUF. ``variant``: one of its recipe's variants
    (default its default); a model built as another variant is rebuilt.

    Returns the model directory. When the build tool chain or the packaged GGUF is missing (a
    serving-only install) an intact model is used as it is; without one, :class:`BuildError`.
    """
    model_dir = md.default_model_dir() if model_dir is None else Path(model_dir)
    progress = ConsoleProgress() if progress is None else progress
    timer = StepTimer(progress, BUILD_STEPS)
    source_error = ""
    with _build_lock(model_dir):
        with timer.step("check", "check the source and the model directory"):
            try:
                source = source_for(DEFAULT_MODEL) if source is None else source
                source_info = source.describe()
            except SourceNotFoundError as exc:
                source, source_info, source_error = None, None, str(exc)
            model = source.entry if source is not None else entry_for(DEFAULT_MODEL)
            wanted = _variant_for(source, variant) if source is not None else variant or model.recipe.default_variant
            kernels = _kernels_for(model, wanted)
            status = check_model(model_dir, source_info, wanted, model, kernels)
        if status.up_to_date and not force:
            progress.info(f"{model_dir}: up to date")
            return model_dir
        missing = recipe.missing_build_tools()
        if source is None or missing:
            why = source_error if source is None else f"build tools not installed: {', '.join(missing)}"
            if status.intact:
                progress.info(f"{model_dir}: using the model as it is ({'; '.join(status.reasons)}); cannot rebuild: {why}")
                return model_dir
            raise BuildError(f"cannot build the model into {model_dir}: {why}")
        progress.info(
            f"building {source.entry.model_name} into {model_dir}: {'forced' if force and status.up_to_date else '; '.join(status.reasons)}"
        )
        _build(model_dir, source, source_info, wanted, timer, progress, kernels)
    return model_dir


def _build(
    model_dir: Path,
    source: Source,
    source_info: dict[str, Any],
    variant: str | None,
    timer: StepTimer,
    progress: Progress,
    kernels: dict[str, Any],
) -> None:
    parent, plan = model_dir.parent, source.entry.recipe
    tmp = Path(tempfile.mkdtemp(prefix=f".{model_dir.name}.building-", dir=parent))
    try:
        stage, work = tmp / "model", tmp / "work"
        stage.mkdir()
        checkpoint = work / "checkpoint"
        steps.go_offline()
        with steps.quiet_tools(progress.verbosity):
            with timer.step("convert", "convert the source to a transformers checkpoint"):
                source.write_checkpoint(checkpoint, progress.verbosity)
            with timer.step("export", f"export to ONNX ({recipe.EXPORT_TASK}, optimum)"):
                fp32 = steps.export_onnx(checkpoint, work / "onnx", progress.verbosity)
            if source.gguf_weights:
                how = f"the GGUF's blocks as they are, variant {variant}, " + (
                    f"our kernels {kernels['library']} ({kernels['isa']})"
                    if kernels["library"]
                    else f"MatMulNBits: {kernels['why']}"
                )
            else:
                how = "MatMulNBits, block 32, symmetric" if plan.requantize_rest else "fp32 weights"
            what = (
                "fuse norms, attention and MLP, quantize to 4 bits"
                if plan.requantize_rest
                else "transform: " + ", ".join(plan.transformation_names)
            )
            with timer.step("transform", f"{what} ({how})"):
                config = json.loads((checkpoint / md.CONFIG_FILE).read_text())
                graph = steps.transform(fp32, stage / md.MODEL_FILE, source.gguf_weights, config, variant, source.entry, kernels)
            with timer.step("verify", "verify with ONNX Runtime"):
                for name in CHECKPOINT_FILES:
                    if (checkpoint / name).is_file():
                        shutil.copyfile(checkpoint / name, stage / name)
                config = json.loads((stage / md.CONFIG_FILE).read_text())
                shapes = shapes_from_config(config)
                io = steps.verify_onnx(
                    stage / md.MODEL_FILE,
                    stage / md.TOKENIZER_FILE,
                    shapes,
                    config.get("bos_token_id"),
                    position_ids=plan.position_ids,
                    sliding_mask=plan.sliding_mask,
                    prompt=plan.verify_prompt,
                    kernels=model_kernels.uses_kernels({model_kernels.MANIFEST_KEY: graph["kernels"]}),
                )
        with timer.step("install", "write the manifest and move the model into place"):
            manifest = make_manifest(source, source_info, variant, config, shapes, io, graph, stage, timer.seconds)
            _write_json(stage / md.MANIFEST_FILE, manifest)
            _install(stage, model_dir, tmp)
        size_mb = (
            sum((model_dir / name).stat().st_size for name in (md.MODEL_FILE, md.WEIGHTS_FILE) if (model_dir / name).is_file())
            / 1e6
        )
        progress.info(
            f"built {source.entry.model_name} in {model_dir} ({md.MODEL_FILE} and its weights: {size_mb:.0f} MB) in {sum(timer.seconds.values()):.1f} s"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _install(stage: Path, model_dir: Path, tmp: Path) -> None:
    """Move ``stage`` to ``model_dir``, moving any previous model out of the way first (same filesystem)."""
    if model_dir.exists():
        os.rename(model_dir, tmp / "previous")
    os.rename(stage, model_dir)


@contextlib.contextmanager
def _build_lock(model_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock beside ``model_dir``; clear what builds that died left behind."""
    parent = model_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    with open(parent / f".{model_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for leftover in parent.glob(f".{model_dir.name}.building-*"):
                shutil.rmtree(leftover, ignore_errors=True)
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def shapes_from_config(config: dict[str, Any]) -> dict[str, Any]:
    """The model's dimensions, from its transformers ``config.json``."""
    heads = config["num_attention_heads"]
    return {
        "num_layers": config["num_hidden_layers"],
        "num_attention_heads": heads,
        "num_key_value_heads": config.get("num_key_value_heads", heads),
        "head_dim": config.get("head_dim") or config["hidden_size"] // heads,
        "hidden_size": config["hidden_size"],
        "intermediate_size": config["intermediate_size"],
        "vocab_size": config["vocab_size"],
        "context_window": config["max_position_embeddings"],
        "tie_word_embeddings": config.get("tie_word_embeddings", False),
        "rope_theta": config.get("rope_theta"),
    }


def special_tokens(tokenizer_path: Path, config: dict[str, Any], stop_tokens: tuple[str, ...]) -> dict[str, Any]:
    """BOS and the end-of-sequence ids to stop on: the config's EOS and the recipe's ``stop_tokens``
    (SmolLM2: ``<|im_end|>``, ``<|endoftext|>``)."""
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    eos_ids = [config.get("eos_token_id")]
    eos_ids += [tokenizer.token_to_id(t) for t in stop_tokens]
    eos_ids = list(dict.fromkeys(i for i in eos_ids if i is not None))
    bos_id = config.get("bos_token_id")
    probe = tokenizer.encode("a", add_special_tokens=True).ids
    return {
        "bos_token_id": bos_id,
        "bos_token": tokenizer.id_to_token(bos_id) if bos_id is not None else None,
        "eos_token_ids": eos_ids,
        "eos_tokens": [tokenizer.id_to_token(i) for i in eos_ids],
        "pad_token_id": config.get("pad_token_id"),
        # What tokenizer.json's post-processor adds when asked to add special tokens.
        "tokenizer_adds_bos": len(probe) > 1 and probe[0] == bos_id,
    }


def make_manifest(
    source: Source,
    source_info: dict[str, Any],
    variant: str | None,
    config: dict[str, Any],
    shapes: dict[str, Any],
    io: dict[str, Any],
    graph: dict[str, Any],
    stage: Path,
    seconds: dict[str, float],
) -> dict[str, Any]:
    """The manifest of the model staged in ``stage`` (every file there must already be final)."""
    files = {
        p.name: {"sha256": sha256_file(p), "size_bytes": p.stat().st_size}
        for p in sorted(stage.iterdir())
        if p.is_file() and p.name != md.MANIFEST_FILE
    }
    return {
        "schema_version": recipe.MANIFEST_SCHEMA_VERSION,
        "recipe_version": source.entry.recipe.recipe_version,
        "model_name": source.entry.model_name,
        "variant": variant,
        "architecture": (config.get("architectures") or [None])[0],
        "source": source_info,
        "tools": recipe.tool_versions(),
        "export": {
            "exporter": "optimum.exporters.onnx.main_export",
            "task": recipe.EXPORT_TASK,
            "optimum_validation": True,  # ONNX vs PyTorch outputs, atol 1e-5; optimum only warns on a miss
        },
        "quantization": graph["quantization"],
        "shapes": shapes,
        "onnx": {
            "file": md.MODEL_FILE,
            "external_data": md.WEIGHTS_FILE if md.WEIGHTS_FILE in files else None,
            "opsets": graph["opsets"],
            "nodes": graph["nodes"],
            "op_counts": graph["op_counts"],
            "transformations": graph["transformations"],
            "inputs": io["inputs"],
            "outputs": io["outputs"],
        },
        model_kernels.MANIFEST_KEY: graph["kernels"],
        "onnx_sha256": files[md.MODEL_FILE]["sha256"],
        "special_tokens": special_tokens(stage / md.TOKENIZER_FILE, config, source.entry.recipe.stop_tokens),
        "chat_template_file": md.CHAT_TEMPLATE_FILE if md.CHAT_TEMPLATE_FILE in files else None,
        "files": files,
        "verification": io["checks"],
        "build_seconds": dict(seconds),
        "built_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
