"""Our GroupAttention against ONNX Runtime's GroupQueryAttention, node for node, on the same inputs:
decode steps of ragged batches, first prompts with padded rows, chunks after a past, SmolLM2's packed
q/k/v and Gemma's separate ones with its sliding window, the cache in place or copied, every ISA
path this CPU has and one and two threads; and what ONNX Runtime's kernel does not do (several rows
each with a chunk after its own past) against the rows run one at a time."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, RuntimeException

from inference.kernels.attention_probe import Call, Shape, row_of, run_separate, run_shared, session

from .conftest import ENV_ISA

SMOLLM2 = Shape()
GEMMA = Shape(heads=4, kv_heads=1, head_dim=256, packed=False, window=6, scale=1 / 16)
TINY = Shape(heads=4, kv_heads=2, head_dim=16)
UNROTATED = Shape(rotary=False)
PART_ROTATED = Shape(rotated=32)
# Heads ONNX Runtime's kernel refuses (a multiple of 16 only), checked against the definition:
ODD_HEAD = Shape(heads=2, kv_heads=1, head_dim=24)  # AVX-512's masked tails
UNEVEN_HEAD = Shape(heads=2, kv_heads=1, head_dim=20)  # not a multiple of 8: AVX2 hands it to the plain path

CASES = [
    pytest.param(SMOLLM2, Call(SMOLLM2, [40], 1, 64), id="smollm2-decode"),
    pytest.param(SMOLLM2, Call(SMOLLM2, [40, 3, 17, 64, 1, 2, 30, 9], 1, 64), id="smollm2-decode-ragged-8"),
    pytest.param(SMOLLM2, Call(SMOLLM2, [7, 4, 1], 7, 16, first=True), id="smollm2-first-prompt-padded"),
    pytest.param(SMOLLM2, Call(SMOLLM2, [20], 5, 32), id="smollm2-chunk-after-past"),
    pytest.param(SMOLLM2, Call(SMOLLM2, [300], 300, 320, first=True), id="smollm2-long-prompt"),
    pytest.param(GEMMA, Call(GEMMA, [30, 5, 7], 1, 40), id="gemma-decode-window"),
    pytest.param(GEMMA, Call(GEMMA, [30], 9, 40), id="gemma-chunk-window"),
    pytest.param(GEMMA, Call(GEMMA, [40, 3], 40, 48, first=True), id="gemma-first-prompt-window"),
    pytest.param(TINY, Call(TINY, [12, 2], 1, 16), id="tiny-decode"),
    pytest.param(UNROTATED, Call(UNROTATED, [10, 3], 1, 16), id="no-rotary"),
    pytest.param(PART_ROTATED, Call(PART_ROTATED, [10, 3], 1, 16), id="partial-rotary"),
    pytest.param(SMOLLM2, Call(SMOLLM2, [9, 5], 1, 16, positions=np.array([[700], [3]])), id="positions-given"),
]


def compare(shape: Shape, call: Call, library: str, threads: int, shared: bool) -> tuple[float, float]:
    """(max |ours - theirs| over the real queries' outputs, the same over the rows' written cache)."""
    feeds = call.feeds()
    run = run_shared if shared else run_separate
    theirs = run(session(shape.model(ours=False), None, threads), feeds)
    ours = run(session(shape.model(ours=True), library, threads), feeds)
    B = len(call.lengths)
    valid = call.valid()
    out = np.abs(theirs[0] - ours[0]).reshape(B, call.S, -1)[valid].max()
    assert ours[1].shape == theirs[1].shape and ours[2].shape == theirs[2].shape
    cache = max(np.abs(t[b, :, :n] - o[b, :, :n]).max() for t, o in zip(theirs[1:], ours[1:]) for b, n in enumerate(call.lengths))
    if call.first:  # a padding query's output is 0, not whatever ONNX Runtime leaves there
        assert not ours[0].reshape(B, call.S, -1)[~valid].any()
    return float(out), float(cache)


@pytest.mark.parametrize(("shape", "call"), CASES)
@pytest.mark.parametrize("shared", [True, False], ids=["in-place", "copied"])
def test_agrees_with_group_query_attention(kernels_library, shape, call, shared) -> None:
    out, cache = compare(shape, call, kernels_library, threads=2, shared=shared)
    assert out < 4e-6, out  # fp32 sums of ~300 terms in another order: a few units in the last place
    assert cache < 1e-6, cache  # the rotated keys (up to ~5): an ulp or two apart at most


@pytest.mark.parametrize("isa", ["plain", "avx2", "avx512", "avx512vnni"])
@pytest.mark.parametrize("threads", [1, 2])
def test_every_path_and_thread_count(kernels_library, cpu_isas, monkeypatch, isa, threads) -> None:
    if isa not in cpu_isas:
        pytest.skip(f"this CPU lacks {isa}")
    monkeypatch.setenv(ENV_ISA, isa)
    for shape, call in [(SMOLLM2, Call(SMOLLM2, [40, 3, 17, 64], 1, 64)), (GEMMA, Call(GEMMA, [30], 9, 40)),
                        (TINY, Call(TINY, [33], 3, 40))]:  # fmt: skip
        out, cache = compare(shape, call, kernels_library, threads, shared=True)
        assert out < 4e-6 and cache < 1e-6, (shape, out, cache)


@pytest.mark.parametrize("isa", ["plain", "avx2", "avx512"])
def test_a_row_is_the_same_alone_as_in_its_batch(kernels_library, cpu_isas, monkeypatch, isa) -> None:
    """Bit for bit: each row's queries are computed on their own, so the rows beside them change nothing
    (seeded runs replay whatever batch they decode in)."""
    if isa not in cpu_isas:
        pytest.skip(f"this CPU lacks {isa}")
    monkeypatch.setenv(ENV_ISA, isa)
    call = Call(SMOLLM2, [40, 3, 17, 64, 1, 2, 30, 9], 1, 64, seed=3)
    feeds = call.feeds()
    sess = session(SMOLLM2.model(ours=True), kernels_library, threads=2)
    batch = run_shared(sess, feeds)
    for b in range(len(call.lengths)):
        alone = run_shared(sess, row_of(feeds, b))
        assert np.array_equal(alone[0][0], batch[0][b]) and np.array_equal(alone[1][0], batch[1][b])


@pytest.mark.parametrize(
    ("shape", "n"),
    [(SMOLLM2, 37), (SMOLLM2, 100), (GEMMA, 100), (TINY, 70)],
    ids=["smollm2-37", "smollm2-100", "gemma-100", "tiny-70"],
)
def test_a_prompt_in_one_call_is_the_same_as_token_by_token(kernels_library, shape, n) -> None:
    """Bit for bit: a query's keys are taken in the same order, with the same arithmetic, whatever the
    call brings with it (a prompt's queries are taken up to four at a time over shared keys), so a
    prompt's last token attends the same in one call as in a decode step after the rest."""
    call = Call(shape, [n], n, 128, first=True, seed=5)
    feeds = call.feeds()
    sess = session(shape.model(ours=True), kernels_library, threads=2)
    whole = run_shared(sess, feeds)
    step = dict(feeds)
    step["past_key"], step["past_value"] = whole[1].copy(), whole[2].copy()
    for name in ("query", "key", "value"):
        if name in feeds:
            step[name] = feeds[name][:, n - 1 :]
    step["position_ids"] = feeds["position_ids"][:, n - 1 :]
    step["total_sequence_length"] = np.array([n], np.int32)
    last = run_shared(sess, step)
    assert np.array_equal(last[0][0, 0], whole[0][0, n - 1])


def test_several_rows_each_with_a_chunk_after_its_past(kernels_library) -> None:
    """ONNX Runtime's kernel refuses batch > 1 with several new tokens after a past; ours takes each
    row's own past: every row as it is when run alone."""
    call = Call(SMOLLM2, [20, 12, 6], 5, 32, seed=7)
    feeds = call.feeds()
    sess = session(SMOLLM2.model(ours=True), kernels_library, threads=2)
    batch = run_shared(sess, feeds)
    for b, n in enumerate(call.lengths):
        alone = {**row_of(feeds, b), "total_sequence_length": np.array([n], np.int32)}
        theirs = run_shared(session(SMOLLM2.model(ours=False), None, 1), alone)
        assert np.abs(batch[0][b] - theirs[0][0]).max() < 4e-6
        assert np.abs(batch[1][b, :, :n] - theirs[1][0, :, :n]).max() < 1e-6


def reference(shape: Shape, call: Call, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The attention's outputs [B, S, H D] in float64 from the definition (a call after a past)."""
    H, Hkv, D = shape.heads, shape.kv_heads, shape.head_dim
    q = feeds["query"].astype(np.float64)
    B, S = q.shape[:2]
    k_new = q[..., H * D : (H + Hkv) * D] if shape.packed else feeds["key"].astype(np.float64)
    v_new = q[..., (H + Hkv) * D :] if shape.packed else feeds["value"].astype(np.float64)
    cos, sin = (t.astype(np.float64) for t in (feeds["cos_cache"], feeds["sin_cache"]))
    half = cos.shape[1]

    def rotate(x: np.ndarray, position: int) -> np.ndarray:  # x [..., D]
        y = x.copy()
        c, s_ = cos[position], sin[position]
        y[..., :half] = x[..., :half] * c - x[..., half : 2 * half] * s_
        y[..., half : 2 * half] = x[..., half : 2 * half] * c + x[..., :half] * s_
        return y

    out = np.zeros((B, S, H * D))
    for b, n in enumerate(call.lengths):
        past = n - S
        keys = feeds["past_key"][b, :, :n].astype(np.float64)  # [Hkv, n, D]
        values = feeds["past_value"][b, :, :n].astype(np.float64)
        for s in range(S):
            position = int(feeds["position_ids"][b, s])
            keys[:, past + s] = rotate(k_new[b, s].reshape(Hkv, D), position)
            values[:, past + s] = v_new[b, s].reshape(Hkv, D)
        for s in range(S):
            end = past + s + 1
            first = max(0, end - shape.window) if shape.window > 0 else 0
            for h in range(H):
                qh = rotate(q[b, s, h * D : (h + 1) * D], int(feeds["position_ids"][b, s]))
                scores = keys[h // (H // Hkv), first:end] @ qh * (shape.scale or 1 / np.sqrt(D))
                p = np.exp(scores - scores.max())
                out[b, s, h * D : (h + 1) * D] = (p / p.sum()) @ values[h // (H // Hkv), first:end]
    return out


@pytest.mark.parametrize("isa", ["plain", "avx2", "avx512"])
@pytest.mark.parametrize(
    ("shape", "call"),
    [
        pytest.param(UNEVEN_HEAD, Call(UNEVEN_HEAD, [33, 5], 1, 40), id="uneven-head"),
        pytest.param(ODD_HEAD, Call(ODD_HEAD, [33, 5], 3, 40), id="odd-head"),
        pytest.param(GEMMA, Call(GEMMA, [30, 12], 4, 40), id="gemma-window-chunks"),
        pytest.param(SMOLLM2, Call(SMOLLM2, [50], 1, 64), id="smollm2"),
    ],
)
def test_agrees_with_the_definition_in_float64(kernels_library, cpu_isas, monkeypatch, isa, shape, call) -> None:
    if isa not in cpu_isas:
        pytest.skip(f"this CPU lacks {isa}")
    monkeypatch.setenv(ENV_ISA, isa)
    feeds = call.feeds()
    ours = run_shared(session(shape.model(ours=True), kernels_library, 2), feeds)[0]
    ref = reference(shape, call, feeds)
    assert np.abs(ours - ref).max() / np.abs(ref).max() < 2e-6


ORT_ERRORS = (Fail, InvalidArgument, RuntimeException, RuntimeError)  # RuntimeError: a call through an IOBinding


@pytest.mark.parametrize(
    ("shape", "types", "expected"),
    [
        (Shape(extra={"rotary_interleaved": 1}), {}, "rotary_interleaved=1 is not supported"),
        (Shape(extra={"softcap": 30.0}), {}, "softcap=30 is not supported"),
        (Shape(extra={"smooth_softmax": 1}), {}, "smooth_softmax=1 is not supported"),
        (Shape(heads=9, kv_heads=2), {}, "num_heads=9 must be a positive multiple of kv_num_heads=2"),
        (Shape(), {"seqlens_k": TensorProto.INT64}, "input seqlens_k is int64; it must be int32"),
        (Shape(), {"query": TensorProto.FLOAT16}, "input query is float16; it must be float32"),
    ],
)
def test_what_it_cannot_do_is_refused_at_session_creation(kernels_library, shape, types, expected) -> None:
    model = shape.model(ours=True, name="layers.4.attn", types=types)
    with pytest.raises(ORT_ERRORS) as caught:
        session(model, kernels_library)
    assert "GroupAttention node 'layers.4.attn'" in str(caught.value) and expected in str(caught.value)


def test_a_bad_call_fails_with_its_reason_and_the_session_serves_on(kernels_library) -> None:
    sess = session(SMOLLM2.model(ours=True, name="layers.0.attn"), kernels_library)
    good = Call(SMOLLM2, [9], 1, 16).feeds()
    outside = dict(good, position_ids=np.array([[5000]], np.int64))
    with pytest.raises(ORT_ERRORS) as caught:
        run_shared(sess, outside)
    assert "row 0, token 0: position 5000 is outside the rotary tables' 1024" in str(caught.value)
    short = dict(good, seqlens_k=np.array([40], np.int32))  # more tokens than total_sequence_length
    with pytest.raises(ORT_ERRORS) as caught:
        run_shared(sess, short)
    assert "row 0: seqlens_k 40 does not fit 1 new tokens of 9 in all" in str(caught.value)
    assert np.isfinite(run_shared(sess, good)[0]).all()
