"""The heavy steps of the recipe: GGUF → transformers → ONNX (with KV cache) → 4-bit → checked.

Importing this module is cheap; each step imports its tools (torch, transformers, optimum, onnx)
when it runs, so nothing here is loaded by a server that only serves a built model.
"""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from .. import model_dir as md
from .. import model_kernels
from ..models import VERIFY_PROMPT, ModelEntry
from . import attention, cuda_variant, head, lossless, recipe

ONNX_DTYPES = {"tensor(float)": "float32", "tensor(int64)": "int64", "tensor(float16)": "float16"}


def go_offline() -> None:
    """No machine here reaches a model hub: make sure nothing tries (set before tools are imported)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


@contextlib.contextmanager
def quiet_tools(verbosity: int) -> Iterator[None]:
    """Keep the tools' noise in check while a build runs; undo their changes to logging afterwards.

    Below verbosity 2 their logs, warnings, prints and progress bars are held back and shown only if
    the block fails. (This swaps the ``sys`` streams process-wide: bind the progress display's
    stream before entering.) At any verbosity, handlers the tools add to the root logger on import
    (onnxruntime's quantizer calls ``logging.basicConfig(level=INFO)``) are removed at the end.
    """
    root = logging.getLogger()
    root_handlers, root_level = list(root.handlers), root.level
    try:
        if verbosity >= 2:
            yield
        else:
            with _held_back_output():
                yield
    finally:
        for handler in root.handlers[:]:
            if handler not in root_handlers:
                root.removeHandler(handler)
        root.setLevel(root_level)


@contextlib.contextmanager
def _held_back_output() -> Iterator[None]:
    names = ("transformers", "optimum", "onnxruntime", "onnxruntime.quantization.matmul_nbits_quantizer", "torch", "onnx_ir")
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    captured = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            warnings.simplefilter("ignore")
            yield
    except BaseException:
        sys.stderr.write(captured.getvalue()[-20000:])
        raise
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _quiet_transformers(verbosity: int) -> None:
    if verbosity < 2:
        from transformers.utils import logging as tf_logging  # the build extra, like every tool a step imports

        tf_logging.set_verbosity_error()
        tf_logging.disable_progress_bar()


def convert_gguf(gguf_path: Path, dest: Path, verbosity: int = 1) -> None:
    """Dequantize the GGUF to an fp32 transformers checkpoint (weights, config, tokenizer) in ``dest``.

    The tokenizer transformers rebuilds from a GGUF prepends its BOS (``<|im_start|>``) to every
    encoding although the GGUF says ``tokenizer.ggml.add_bos_token = false`` (and the original
    SmolLM2 tokenizer adds nothing): the flag from the GGUF is applied before saving, so the saved
    ``tokenizer.json`` adds no special token; callers prepend one explicitly when they want it.
    """
    save_gguf_tokenizer(gguf_path, dest, verbosity)
    convert_gguf_weights(gguf_path, dest, verbosity)


def convert_gguf_weights(gguf_path: Path, dest: Path, verbosity: int = 1) -> None:
    """The GGUF dequantized to an fp32 transformers checkpoint (weights, config) in ``dest``; no tokenizer."""
    go_offline()
    _quiet_transformers(verbosity)
    from transformers import AutoModelForCausalLM  # the build extra

    model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name, local_files_only=True)
    model.save_pretrained(dest)
    del model
    gc.collect()


def save_gguf_tokenizer(gguf_path: Path, dest: Path, verbosity: int = 1) -> None:
    """The tokenizer transformers rebuilds from the GGUF, with the GGUF's BOS flag, saved in ``dest``."""
    go_offline()
    from transformers import AutoTokenizer  # the build extra

    _quiet_transformers(verbosity)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name, local_files_only=True)
    tokenizer.add_bos_token = gguf_add_bos_token(gguf_path)  # rebuilds the post-processor
    tokenizer.save_pretrained(dest)


def gguf_add_bos_token(gguf_path: Path) -> bool:
    """The GGUF's ``tokenizer.ggml.add_bos_token`` flag (llama.cpp's default, true, when absent)."""
    from gguf import GGUFReader  # the build extra

    field = GGUFReader(gguf_path).fields.get("tokenizer.ggml.add_bos_token")
    return True if field is None else bool(field.contents())


def export_onnx(checkpoint: Path, out_dir: Path, verbosity: int = 1, validate: bool = True) -> Path:
    """optimum's export of ``checkpoint`` as a decoder with KV cache; returns the fp32 ``model.onnx``.

    ``validate`` compares the ONNX outputs with PyTorch's (optimum warns, not fails, on a mismatch).
    """
    go_offline()
    _quiet_transformers(verbosity)
    from optimum.exporters.onnx import main_export  # the build extra

    main_export(
        model_name_or_path=str(checkpoint),
        output=str(out_dir),
        task=recipe.EXPORT_TASK,
        framework="pt",
        library_name="transformers",
        device="cpu",
        local_files_only=True,
        do_validation=validate,
    )
    path = out_dir / "model.onnx"
    if not path.is_file():
        raise RuntimeError(f"the ONNX export wrote no model.onnx into {out_dir}: {sorted(os.listdir(out_dir))}")
    return path


def transform(
    src: Path,
    dest: Path,
    gguf_weights: Path | None,
    config: dict[str, Any],
    variant: str | None,
    model: ModelEntry,
    kernels: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The fp32 export ``src`` made lean (and, for SmolLM2, 4-bit), into one self-contained ``dest``.

    Runs ``model.recipe.transformations`` in order (SmolLM2: the norm fusions (onnxruntime.transformers),
    packed q/k/v + GroupQueryAttention, packed gate/up, the GGUF's blocks, the head slice; Gemma:
    the norm fusions, QK-norm + GroupQueryAttention with the sliding window, FastGelu, packed
    gate/up, the head slice, then the GGUF's blocks): each fusion is the function its
    ``Transformation`` names. With ``gguf_weights`` the GGUF step puts the GGUF's own
    blocks in (``lossless.convert`` with the ``variant``'s settings; raises if a GGUF tensor does not
    dequantize to exactly the export's weight); ``head`` adds the ``logits_to_keep`` slice. Weight
    MatMuls left after the GGUF step (all of them without a GGUF, as for the tiny model) are
    quantized there by onnxruntime's ``MatMulNBitsQuantizer`` (4 bits, block 32, symmetric) when
    ``model.recipe.requantize_rest``, else kept fp32.

    ``kernels``: our kernel library as ``model_kernels.library_for(kernel_formats)`` describes it
    (default: asked now); where it is there, the GGUF step puts the MatMuls of the formats it names
    into ``MatMulGguf`` nodes instead of ``MatMulNBits`` (``lossless``' module docstring).

    Returns what the manifest records: ``quantization`` (the method, faithfully), every
    transformation's summary in order, the graph's opsets and operator counts, and ``kernels``
    (the library used, its ISA and how many ``MatMulGguf`` nodes; or why none).
    """
    import onnx  # heavy, the build extra (with the quantizer, which imports it)

    plan = model.recipe
    settings = plan.variants[variant or plan.default_variant]
    kernels = model_kernels.library_for(plan.kernel_formats) if kernels is None else kernels
    kernels = cuda_variant.kernels_for(settings, kernels)  # the GPU variant: ONNX Runtime's kernels only
    kernel_formats = frozenset(kernels.get("formats", ())) if kernels.get("library") else frozenset()
    onnx_model = onnx.load(str(src))
    done: dict[str, Any] = {"export": {"nodes": len(onnx_model.graph.node)}}
    conversion, rest, requantize = None, [], []
    for step in plan.transformations:
        if step.name == "head":
            # Before the GGUF step (Gemma), the head MatMul reads the sliced hidden states, whatever
            # the GGUF step makes of it (a sum of terms, for split 8-bit blocks).
            done["head"] = {**head.keep_last_positions(onnx_model), "nodes_after": len(onnx_model.graph.node)}
        elif step.name == "lossless":
            if gguf_weights is not None:
                conversion = lossless.convert(
                    onnx_model,
                    gguf_weights,
                    config,
                    settings["accuracy_level"],
                    tuple(settings["gguf_types"]),
                    permuted_qk=plan.gguf_permutes_qk,
                    split_8bit=settings.get("split_8bit", False),
                    kernel_formats=kernel_formats,
                )
                done["lossless"] = {"variant": variant, **settings, "nodes_after": len(onnx_model.graph.node)}
            onnx_model, rest, requantize = _requantize_rest(onnx_model, conversion, plan.requantize_rest, done)
        else:
            done[step.name] = step.load()(onnx_model, config)
    attention_ops = attention.to_our_kernel(onnx_model) if model_kernels.has_attention_kernel(kernels) else 0
    if cuda_variant.is_cuda(settings):  # float16 but the logits; every node checked against CUDA's kernels
        onnx_model, done["cuda"] = cuda_variant.to_cuda(onnx_model)
    save_with_weights_beside(onnx_model, dest)
    q = recipe.QUANTIZATION
    ops: dict[str, int] = {}
    for node in onnx_model.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    if conversion is None:
        quantization = dict(q) if plan.requantize_rest else {"method": "none: fp32 weights", "fp32_matmuls": len(rest)}
    elif conversion.kernel_ops:
        quantization = {
            "method": recipe.KERNELS_METHOD,
            "block_size": recipe.BLOCK_SIZE,
            "variant": variant,
            **settings,
            "weights_bit_exact": True,  # checked against the export's fp32 weights before replacing them
            **conversion.summary(),
            "matmuls": f"{model_kernels.OP_TYPE} ({model_kernels.DOMAIN}) over the GGUF's block bytes as stored; "
            "mode exact (fp32 activations) where the variant's accuracy_level is 0, fast (int8 activations) where 4",
            "requantized": {**q, "matmuls": len(requantize)} if plan.requantize_rest else None,
        }
    elif not plan.requantize_rest:
        quantization = {
            "method": "gguf-lossless-matmulnbits",
            "block_size": recipe.BLOCK_SIZE,
            "variant": variant,
            **settings,
            "weights_bit_exact": True,  # checked against the export's fp32 weights before replacing them
            **conversion.summary(),
            "q8_0": "8 bits, scale d, default zero point 128 (MatMulNBits; GatherBlockQuantized for the embedding)",
            "fp32": f"{len(rest)} MatMuls keep the export's fp32 weights (the GGUF's values, dequantized exactly)",
        }
    else:
        quantization = {
            "method": recipe.LOSSLESS_METHOD,
            "block_size": recipe.BLOCK_SIZE,
            "variant": variant,
            **settings,
            "weights_bit_exact": True,  # checked against the export's fp32 weights before replacing them
            **conversion.summary(),
            "q4_1": "MatMulNBits, 4 bits, scale d, default zero point 8, plus an fp32 MatMul of the input's "
            "block sums by the blocks' offsets m + 8d",
            "q8_0": "8 bits, scale d, default zero point 128 (MatMulNBits; GatherBlockQuantized for the embedding)"
            if "Q8_0" in settings["gguf_types"]
            else "kept as the export's fp32 weights (the Q8_0 values exactly)",
            "requantized": {**q, "matmuls": len(requantize)},
        }
    return {
        "quantization": quantization,
        "opsets": {(o.domain or "ai.onnx"): o.version for o in onnx_model.opset_import},
        "nodes": len(onnx_model.graph.node),
        "op_counts": dict(sorted(ops.items())),
        "transformations": done,
        "kernels": _kernels_record(kernels, conversion.kernel_ops if conversion else 0, attention_ops),
    }


WEIGHTS_ALIGNMENT = 4096  # a page: ONNX Runtime maps an initializer from the file only at such an offset
WEIGHTS_INLINE_BELOW = 1024  # bytes: smaller initializers stay in the graph


def save_with_weights_beside(onnx_model: Any, dest: Path) -> None:
    """``onnx_model`` as ``dest`` (its graph) and ``md.WEIGHTS_FILE`` beside it: every initializer of
    ``WEIGHTS_INLINE_BELOW`` bytes or more, each at an offset that is a multiple of a page (ONNX
    external data). ONNX Runtime then maps the weights from the file instead of copying them onto the
    heap, and our kernels hand back the pages they have repacked: measured on SmolLM2's exact build,
    a process's anonymous memory after making the session 256 -> 121 MB. ``onnx_model``'s initializers are left
    pointing at the file."""
    import onnx
    from onnx.external_data_helper import set_external_data

    with open(dest.parent / md.WEIGHTS_FILE, "wb") as weights:
        for tensor in onnx_model.graph.initializer:
            if not tensor.HasField("raw_data") or len(tensor.raw_data) < WEIGHTS_INLINE_BELOW:
                continue
            weights.write(b"\0" * (-weights.tell() % WEIGHTS_ALIGNMENT))
            offset = weights.tell()
            weights.write(tensor.raw_data)
            set_external_data(tensor, md.WEIGHTS_FILE, offset, len(tensor.raw_data))
            tensor.ClearField("raw_data")
            tensor.data_location = onnx.TensorProto.EXTERNAL
    onnx.save(onnx_model, str(dest))


def _requantize_rest(
    onnx_model: Any, conversion: Any, requantize_rest: bool, done: dict[str, Any]
) -> tuple[Any, list[str], list[str]]:
    """After the GGUF step: the weight MatMuls it left (``rest``), quantized by onnxruntime's
    ``MatMulNBitsQuantizer`` when ``requantize_rest`` (those: ``requantize``; recorded in ``done``)."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer  # needs onnx: the build extra

    weights = {i.name for i in onnx_model.graph.initializer}
    exclude = set(conversion.offset_matmuls + conversion.block_sum_matmuls) if conversion else set()
    rest = [n.name for n in onnx_model.graph.node if n.op_type == "MatMul" and n.input[1] in weights and n.name not in exclude]
    requantize = rest if requantize_rest else []
    q = recipe.QUANTIZATION
    if requantize:
        quantizer = MatMulNBitsQuantizer(
            onnx_model,
            bits=q["bits"],
            block_size=q["block_size"],
            is_symmetric=q["symmetric"],
            accuracy_level=q["accuracy_level"],
            nodes_to_exclude=sorted(exclude),
        )
        quantizer.process()
        onnx_model = quantizer.model.model
        done["requantize"] = {**q, "matmuls": len(requantize), "nodes_after": len(onnx_model.graph.node)}
    return onnx_model, rest, requantize


def _kernels_record(kernels: dict[str, Any], ops: int, attention_ops: int) -> dict[str, Any]:
    """The manifest's ``kernels`` section (``model_kernels``' docstring)."""
    if kernels.get("library") is None:
        return {"library": None, "why": kernels.get("why")}
    return {
        "library": kernels["library"], "isa": kernels.get("isa"), "formats": kernels.get("formats"), "ops": ops,
        "attention_ops": attention_ops,
    }  # fmt: skip


def _io_spec(args) -> list[dict[str, Any]]:
    return [{"name": a.name, "dtype": ONNX_DTYPES.get(a.type, a.type), "shape": list(a.shape)} for a in args]


def verify_onnx(
    model_path: Path,
    tokenizer_path: Path,
    shapes: dict[str, int],
    bos_token_id: int | None,
    *,
    position_ids: bool = True,
    sliding_mask: bool = False,
    prompt: str = VERIFY_PROMPT,
    kernels: bool = False,
) -> dict[str, Any]:
    """Load the model in ONNX Runtime, run prefills and a decode step, and check every shape.

    Returns the session's inputs and outputs, and the greedy next token after ``prompt``
    (encoded with no special token), alone and with the BOS prepended, for the manifest.
    ``position_ids``: whether the graph takes them (Gemma's export derives them from the mask);
    ``sliding_mask``: whether it takes ``sliding_attention_mask`` (fed the attention mask here: every
    layer's cache holds every position); ``kernels``: whether the graph holds our ``MatMulGguf`` or ``GroupAttention`` nodes
    (the session then registers the kernel library).
    Raises ``RuntimeError`` on a missing input or a wrong shape.
    """
    import onnxruntime as ort  # loaded by the verify step only: importing the build API loads no runtime

    options = ort.SessionOptions()
    options.intra_op_num_threads = min(2, os.cpu_count() or 1)
    if kernels:
        model_kernels.register_library(options, model_path)
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    inputs, outputs = session.get_inputs(), session.get_outputs()
    layers, kv_heads, head_dim = shapes["num_layers"], shapes["num_key_value_heads"], shapes["head_dim"]
    past_names = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    expected = {"input_ids", "attention_mask", "logits_to_keep", *past_names} | ({"position_ids"} if position_ids else set())
    expected |= {md.SLIDING_MASK} if sliding_mask else set()
    if {i.name for i in inputs} != expected:
        raise RuntimeError(f"unexpected ONNX inputs: {sorted({i.name for i in inputs} ^ expected)}")
    output_names = [o.name for o in outputs]

    def run(ids: list[int], past: dict[str, Any], keep: int = 0) -> tuple[Any, dict[str, Any]]:
        """One forward pass; checks and returns the logits [1, keep or n, vocab] and the new cache."""
        offset, n = next(iter(past.values())).shape[2], len(ids)
        feed = {
            "input_ids": np.array([ids], dtype=np.int64),
            "attention_mask": np.ones((1, offset + n), dtype=np.int64),
            "logits_to_keep": np.array(keep, dtype=np.int64),
            **past,
        }
        if position_ids:
            feed["position_ids"] = np.arange(offset, offset + n, dtype=np.int64)[None, :]
        if sliding_mask:
            feed[md.SLIDING_MASK] = feed["attention_mask"]
        result = dict(zip(output_names, session.run(None, feed)))
        logits = result["logits"]
        if logits.shape != (1, keep or n, shapes["vocab_size"]) or not np.isfinite(logits).all():
            raise RuntimeError(f"bad logits: shape {logits.shape}, all finite {np.isfinite(logits).all()}")
        present = {name: result[name.replace("past_key_values", "present")] for name in past_names}
        for name, value in present.items():
            if value.shape != (1, kv_heads, offset + n, head_dim):
                raise RuntimeError(f"bad shape {value.shape} for {name} after {offset} + {n} tokens")
        return logits, present

    cache_dtypes = {i.name: md.CACHE_DTYPES[i.type] for i in inputs if i.name in past_names}  # float16 for the GPU variant
    empty = {n: np.zeros((1, kv_heads, 0, head_dim), dtype=cache_dtypes[n]) for n in past_names}
    ids = Tokenizer.from_file(str(tokenizer_path)).encode(prompt, add_special_tokens=False).ids
    checks = []
    for prefix in ([], [] if bos_token_id is None else [bos_token_id]):
        logits, past = run(prefix + ids, empty)
        last, _ = run(prefix + ids, empty, keep=1)
        if not np.allclose(last[0, -1], logits[0, -1], rtol=0, atol=1e-4):
            raise RuntimeError("logits_to_keep=1 does not give the last position's logits")
        next_id = int(logits[0, -1].argmax())
        checks.append({"prompt": prompt, "prompt_ids": prefix + ids, "greedy_next_id": next_id})
    run([next_id], past)  # one decode step on top of a cache
    return {"inputs": _io_spec(inputs), "outputs": _io_spec(outputs), "checks": checks}
