"""One attention node in an ONNX model, for the tests and the micro-bench: ONNX Runtime's
``GroupQueryAttention`` (com.microsoft) or our ``GroupAttention`` (playground.kernels) with the same
inputs and attributes; random inputs for it; and a call of either, with the cache as separate arrays
or as one buffer bound as past and present (what the engine does). Needs the ``build`` extra (onnx)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from .library import ATTENTION_OP, DOMAIN

MS_DOMAIN = "com.microsoft"
INPUTS = ("query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length", "cos_cache",
          "sin_cache", "position_ids")  # fmt: skip


@dataclass(frozen=True)
class Shape:
    """The attention's sizes and attributes (SmolLM2's by default)."""

    heads: int = 9
    kv_heads: int = 3
    head_dim: int = 64
    packed: bool = True
    rotary: bool = True
    window: int = -1
    scale: float = 0.0
    positions: int = 1024  # rows of the rotary tables
    rotated: int | None = None  # dimensions rotated (None: all)
    extra: dict[str, Any] = field(default_factory=dict)  # more attributes, as given

    def model(self, ours: bool, name: str = "attention", types: dict[str, int] | None = None) -> bytes:
        types = types or {}
        given = [x for x in INPUTS if not (self.packed and x in ("key", "value"))]
        inputs = [
            helper.make_tensor_value_info(x, types.get(x, TensorProto.INT64 if x == "position_ids" else
                                                       TensorProto.INT32 if x in ("seqlens_k", "total_sequence_length")
                                                       else TensorProto.FLOAT), None)
            for x in given
        ]  # fmt: skip
        outputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, None) for x in ("output", "present_key", "present_value")]
        attributes: dict[str, Any] = {"num_heads": self.heads, "kv_num_heads": self.kv_heads, "do_rotary": int(self.rotary),
                                      "rotary_interleaved": 0, **({"scale": self.scale} if self.scale else {}),
                                      **({"local_window_size": self.window} if self.window > 0 else {}), **self.extra}  # fmt: skip
        node = helper.make_node(
            ATTENTION_OP if ours else "GroupQueryAttention",
            [x if x in given else "" for x in INPUTS],
            ["output", "present_key", "present_value"],
            name=name,
            domain=DOMAIN if ours else MS_DOMAIN,
            **attributes,
        )
        graph = helper.make_graph([node], "one_attention", inputs, outputs)
        opsets = [helper.make_opsetid("", 21), helper.make_opsetid(DOMAIN if ours else MS_DOMAIN, 1)]
        return helper.make_model(graph, opset_imports=opsets, ir_version=10).SerializeToString()

    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        half = (self.rotated or self.head_dim) // 2
        angles = np.arange(self.positions, dtype=np.float64)[:, None] * 10000.0 ** (-np.arange(half) / half)[None, :]
        return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


@dataclass
class Call:
    """One call's inputs: ``lengths`` every row's tokens after the call, ``S`` new tokens a row,
    ``capacity`` the cache buffers' positions."""

    shape: Shape
    lengths: list[int]
    S: int
    capacity: int
    first: bool = False  # a first prompt: total_sequence_length == S, rows padded past their length
    seed: int = 0
    positions: np.ndarray | None = None  # [B, S]; None: each row's own

    def feeds(self) -> dict[str, np.ndarray]:
        sh, rng, B = self.shape, np.random.default_rng(self.seed), len(self.lengths)
        width = (sh.heads + 2 * sh.kv_heads) * sh.head_dim if sh.packed else sh.heads * sh.head_dim
        feeds: dict[str, np.ndarray] = {"query": rng.standard_normal((B, self.S, width), np.float32)}
        if not sh.packed:
            for x in ("key", "value"):
                feeds[x] = rng.standard_normal((B, self.S, sh.kv_heads * sh.head_dim), np.float32)
        cache = (B, sh.kv_heads, self.capacity, sh.head_dim)
        feeds["past_key"] = rng.standard_normal(cache, np.float32)
        feeds["past_value"] = rng.standard_normal(cache, np.float32)
        feeds["seqlens_k"] = np.array(self.lengths, np.int32) - 1
        total = self.S if self.first else max(self.lengths)
        feeds["total_sequence_length"] = np.array([total], np.int32)
        feeds["cos_cache"], feeds["sin_cache"] = sh.tables()
        past = [0 if self.first else n - self.S for n in self.lengths]
        positions = np.array([[p + s for s in range(self.S)] for p in past], np.int64)
        feeds["position_ids"] = positions if self.positions is None else self.positions
        return feeds

    def valid(self) -> np.ndarray:
        """[B, S] bool: the queries that are a row's own (not a first prompt's padding)."""
        s = np.arange(self.S)[None, :]
        return s < np.array(self.lengths)[:, None] if self.first else np.ones((len(self.lengths), self.S), bool)


def row_of(feeds: dict[str, np.ndarray], b: int) -> dict[str, np.ndarray]:
    """A call's inputs for row ``b`` alone (the tables and the total are the call's)."""
    return {k: v if k in ("total_sequence_length", "cos_cache", "sin_cache") else v[b : b + 1] for k, v in feeds.items()}


def session(model: bytes, library: str | None, threads: int = 1) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if library:
        options.register_custom_ops_library(library)
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def run_separate(sess: ort.InferenceSession, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """output, present_key, present_value with the cache as the inputs' own arrays (present new)."""
    names = {i.name for i in sess.get_inputs()}
    return sess.run(None, {k: v for k, v in feeds.items() if k in names})


def bind_in_place(sess: ort.InferenceSession, feeds: dict[str, np.ndarray]) -> tuple[ort.IOBinding, np.ndarray, np.ndarray]:
    """The call bound as the engine binds it: past and present one buffer each (copies of the feeds'
    past, written in place by every run); returns the binding and the two buffers."""
    names = {i.name for i in sess.get_inputs()}
    binding = sess.io_binding()
    keys, values = feeds["past_key"].copy(), feeds["past_value"].copy()
    binding.bind_output("output")  # first: get_outputs() lists them in the order bound
    for name, value in feeds.items():
        if name in names and not name.startswith("past_"):
            binding.bind_cpu_input(name, value)
    for kind, buffer in (("key", keys), ("value", values)):
        cache = ort.OrtValue.ortvalue_from_numpy(buffer)
        binding.bind_ortvalue_input(f"past_{kind}", cache)
        binding.bind_ortvalue_output(f"present_{kind}", cache)
    return binding, keys, values


def run_shared(sess: ort.InferenceSession, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The same with past and present bound to one buffer each (written in place, as the engine runs)."""
    binding, keys, values = bind_in_place(sess, feeds)
    sess.run_with_iobinding(binding)
    return [binding.get_outputs()[0].numpy(), keys, values]
