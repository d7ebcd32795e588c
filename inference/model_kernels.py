"""Which matrix kernels a built model computes with, and our kernel library's place in its sessions.

A model built while our kernel library (``inference.kernels``) could be loaded holds ``MatMulGguf``
nodes (domain ``playground.kernels``) over the GGUF's own blocks; one built without it holds ONNX
Runtime's ``MatMulNBits``. The build records which in the manifest, the one place this fact lives:

    "kernels": {"library": "<version>", "isa": "avx512vnni", "ops": 121, "attention_ops": 30}
                                            # ops: MatMulGguf nodes; attention_ops: GroupAttention ones
    "kernels": {"library": null, "why": "<why the library was not used>"}

(``library`` is the version the build found, also when no MatMul of the model is in a format it
computes: ``ops`` 0; a manifest without the section is older than the kernels: ``MatMulNBits``.)
Everything else reads it through here: the up-to-date check (:func:`rebuild_reason`), every session
over a built model (:func:`register`), and the words the page, ``/v1/models`` and the ``started``
events show (:func:`serving_text`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from inference import kernels
from inference.model_dir import MANIFEST_FILE, read_manifest

DOMAIN = "playground.kernels"
OPSET_VERSION = 1
OP_TYPE = "MatMulGguf"
ATTENTION_OP_TYPE = kernels.ATTENTION_OP  # our attention, in place of ONNX Runtime's GroupQueryAttention
MANIFEST_KEY = "kernels"
# The formats a library that does not list its own computes (its first version's: SmolLM2's).
DEFAULT_FORMATS = ("Q4_1", "Q8_0")


class KernelLibraryMissingError(RuntimeError):
    """A model built with our kernels is loaded where the kernel library cannot be found."""


def library_now() -> dict[str, Any]:
    """What a build made now would record (``ops`` left out): the library's version, ISA, the GGUF
    formats it computes and the ops it registers (``op_types``), or ``{"library": None, "why": …}``."""
    facts = kernels.describe()
    if kernels.library_path() is None or "version" not in facts:
        return {"library": None, "why": str(facts.get("why") or "the kernel library cannot be loaded")}
    formats = facts.get("formats", DEFAULT_FORMATS)
    if isinstance(formats, str):
        formats = [f.strip() for f in formats.split(",") if f.strip()]
    op_types = [str(op) for op in facts.get("op_types", [OP_TYPE])]
    return {
        "library": str(facts["version"]), "isa": str(facts.get("isa") or "plain C"), "formats": sorted(formats),
        "op_types": op_types,
    }  # fmt: skip


def library_for(formats: Iterable[str]) -> dict[str, Any]:
    """:func:`library_now` for a model whose build may put ``formats`` (its recipe's ``kernel_formats``)
    into our kernels: the formats narrowed to those, or no library when it computes none of them
    (so a model that cannot use the library is not rebuilt when the library comes or goes)."""
    now = library_now()
    if now["library"] is None:
        return now
    usable = sorted(set(now["formats"]) & set(formats))
    if not usable:
        return {"library": None, "why": f"the model's build uses our kernels for none of {sorted(now['formats'])} yet"}
    return {**now, "formats": usable}


def recorded(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's ``kernels`` section (an older manifest's: no library)."""
    section = manifest.get(MANIFEST_KEY)
    return dict(section) if isinstance(section, Mapping) else {"library": None, "why": "built before our kernels"}


def uses_kernels(manifest: Mapping[str, Any]) -> bool:
    """Whether the model's graph holds ``MatMulGguf`` or ``GroupAttention`` nodes (its sessions need the library)."""
    section = recorded(manifest)
    return section.get("library") is not None and int(section.get("ops") or 0) + int(section.get("attention_ops") or 0) > 0


def attention_op_type(manifest: Mapping[str, Any]) -> str:
    """The op the model's attention layers are: our ``GroupAttention`` where the build used it, else
    ONNX Runtime's ``GroupQueryAttention``."""
    return ATTENTION_OP_TYPE if int(recorded(manifest).get("attention_ops") or 0) else "GroupQueryAttention"


def has_attention_kernel(library: Mapping[str, Any]) -> bool:
    """Whether the library :func:`library_for` described computes attention (``GroupAttention``)."""
    return library.get("library") is not None and ATTENTION_OP_TYPE in library.get("op_types", ())


def serving_text(manifest: Mapping[str, Any]) -> str:
    """Which kernels compute the model's matrix products, in words: ``our kernels (avx512vnni)``,
    ``ONNX Runtime MatMulNBits``, or ``ONNX Runtime MatMul (fp32)`` for a graph with neither."""
    if uses_kernels(manifest):
        return f"our kernels ({recorded(manifest).get('isa') or 'plain C'})"
    if "MatMulNBits" in manifest.get("onnx", {}).get("op_counts", {}):
        return "ONNX Runtime MatMulNBits"
    return "ONNX Runtime MatMul (fp32)"


def rebuild_reason(manifest: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    """Why a model must be rebuilt because the kernel library came, went or changed version since its
    build (``now``: :func:`library_now`); None when the same library (or none) is there."""
    then = recorded(manifest).get("library")
    if then == now.get("library"):
        return None
    if now.get("library") is None:
        return f"kernel library {then} -> none ({now.get('why')})"
    return f"kernel library {then or 'none'} -> {now['library']}"


def register(options: Any, manifest: Mapping[str, Any], model: Path | str) -> None:
    """Register our kernel library with the ``onnxruntime.SessionOptions`` ``options`` when the model
    (``model``: its directory or file, for the message) was built with it; a clear
    :class:`KernelLibraryMissingError` when it was and the library cannot be found here."""
    if uses_kernels(manifest):
        register_library(options, model)


def register_library(options: Any, model: Path | str) -> None:
    """Register our kernel library with ``options`` (``KernelLibraryMissingError`` naming ``model`` if absent)."""
    now = library_now()
    if now["library"] is None:
        raise KernelLibraryMissingError(
            f"{model} was built with our kernels ({OP_TYPE}) but the kernel library is not available here: "
            f"{now['why']}; build it (source scripts/env.sh) or rebuild the model without it"
        )
    options.register_custom_ops_library(str(kernels.library_path()))


def register_beside(options: Any, model_file: Path) -> None:
    """:func:`register` for the ``model.onnx`` at ``model_file``, by the manifest beside it (none there:
    a graph being built or a bare file, which registers nothing)."""
    if (model_file.parent / MANIFEST_FILE).is_file():
        register(options, read_manifest(model_file.parent), model_file.parent)
