"""Everything a worker loads once per model: the decoder session, the text codec and what the manifest says."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnxruntime as ort

from inference.allocator import keep_freed_memory, release_freed_memory
from inference.chat_template import ChatTemplate
from inference.engine import CPU, Decoder
from inference.model_catalog import CATALOG
from inference.model_dir import (
    CHAT_TEMPLATE_FILE,
    MANIFEST_FILE,
    MODEL_FILE,
    TOKENIZER_FILE,
    ModelNotBuiltError,
    ModelShape,
    document_start,
)
from inference.model_kernels import serving_text
from inference.text import TextCodec


@dataclass(frozen=True)
class ModelInfo:
    """What every run reports about the model it ran on."""

    id: str  # the served model's id (inference.model_catalog): what frames name in ``model``
    name: str  # the manifest's model_name
    manifest_sha256: str
    execution_provider: str
    onnxruntime_version: str
    context_window: int
    kernels: str  # which kernels compute its matrix products (model_kernels.serving_text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "manifest_sha256": self.manifest_sha256,
            "execution_provider": self.execution_provider,
            "onnxruntime_version": self.onnxruntime_version,
            "context_window": self.context_window,
            "kernels": self.kernels,
        }


@dataclass(frozen=True)
class Runtime:
    decoder: Decoder
    codec: TextCodec
    info: ModelInfo

    @property
    def shape(self) -> ModelShape:
        return self.decoder.shape


def load_runtime(
    model_dir: Path,
    providers: Sequence[str] = (CPU,),
    intra_op_threads: int = 2,
    model_id: str | None = None,
    spinning: bool = True,
) -> Runtime:
    """Loads a built model directory; raises FileNotFoundError when it has not been built.
    ``model_id``: the id it is served under (default: the manifest's ``model_name``'s catalogue id);
    ``spinning``: the ``Decoder``'s (off for a draft model, which takes turns with its target).
    The process keeps its freed heap from then on (``allocator.keep_freed_memory``), but for what the
    load itself freed, which goes back to the system (``allocator.release_freed_memory``)."""
    keep_freed_memory()
    manifest_path = model_dir / MANIFEST_FILE
    if not manifest_path.is_file():
        raise ModelNotBuiltError(f"no built model in {model_dir} (missing {MANIFEST_FILE}); run `python manage.py build_model`")
    manifest_bytes = manifest_path.read_bytes()
    manifest = json.loads(manifest_bytes)
    shapes = manifest["shapes"]
    shape = ModelShape(
        num_layers=int(shapes["num_layers"]),
        kv_heads=int(shapes["num_key_value_heads"]),
        head_dim=int(shapes["head_dim"]),
        vocab_size=int(shapes["vocab_size"]),
        context_window=int(shapes["context_window"]),
    )
    decoder = Decoder(model_dir / MODEL_FILE, shape, providers, intra_op_threads, spinning)
    special = manifest["special_tokens"]
    template_path = model_dir / CHAT_TEMPLATE_FILE
    template = None
    if template_path.is_file():
        names = {"bos_token": special.get("bos_token"), "eos_token": (special.get("eos_tokens") or [None])[0]}
        template = ChatTemplate.from_file(template_path, {k: v for k, v in names.items() if v})
    name = str(manifest["model_name"])
    if model_id is None:
        model_id = next((entry.id for entry in CATALOG.values() if entry.model_name == name), name)
    entry = CATALOG.get(model_id)
    codec = TextCodec.from_file(
        model_dir / TOKENIZER_FILE,
        frozenset(int(i) for i in special["eos_token_ids"]),
        template,
        document_start=document_start(special),
        no_chat_reason=entry.no_chat_reason() if entry else f"{model_id} has no chat template; use completion",
    )
    info = ModelInfo(
        id=model_id,
        name=name,
        manifest_sha256=hashlib.sha256(manifest_bytes).hexdigest(),
        execution_provider=decoder.provider,
        onnxruntime_version=ort.__version__,
        context_window=shape.context_window,
        kernels=serving_text(manifest),
    )
    release_freed_memory()
    return Runtime(decoder, codec, info)
