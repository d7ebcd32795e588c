"""The generation loop's own cost per token: everything a run does except the model call.

Part of ``python -m inference.bench`` (each round, each ``--model-dir`` build).

One websocket-like run (the full sampler chain at its defaults, temperature 1, seeded, top-20
alternatives traced, text streamed, ``ignore_eos``) is timed whole, and the time spent inside ONNX
Runtime's ``run_with_iobinding`` is taken out: what is left is the loop (chain, trace, text, the
driver) and the engine's glue around the session (input arrays, cache binding, reading the logits).
Two clocks: wall time, and this thread's CPU time (``time.thread_time``), which a machine shared
with other work inflates far less than the wall clock; the prefill's model call is taken out too,
its glue stays in. Reported per token, min/median/max over rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from inference.bench.concurrency import TOP_N
from inference.decoding.generation import GenerationRequest, run
from inference.decoding.loop_params import LoopParams
from inference.runtime import Runtime
from inference.sampling import SamplingParams

PROMPT = "The capital of France is"


@dataclass
class ModelClock:
    """Wall and thread-CPU seconds spent inside the session's runs so far."""

    wall: float = 0.0
    cpu: float = 0.0


@contextmanager
def timed_session(runtime: Runtime) -> Iterator[ModelClock]:
    """Counts the time inside the decoder session's ``run_with_iobinding`` while the block runs
    (the session's own method is called; it is put back on exit)."""
    session = runtime.decoder.session
    inner: Callable[..., Any] = session.run_with_iobinding
    clock = ModelClock()

    def run_with_iobinding(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            clock.wall += time.perf_counter() - wall
            clock.cpu += time.thread_time() - cpu

    session.run_with_iobinding = run_with_iobinding  # type: ignore[method-assign]
    try:
        yield clock
    finally:
        del session.run_with_iobinding  # the class's method again


def loop_ms_per_token(runtime: Runtime, tokens: int) -> dict[str, float]:
    """One run of ``tokens`` tokens: the loop's wall and CPU milliseconds per token, model call excluded."""
    request = GenerationRequest(
        PROMPT, sampling=SamplingParams(seed=0), loop=LoopParams(max_tokens=tokens, ignore_eos=True), top_n=TOP_N
    )
    with timed_session(runtime) as model:
        wall, cpu = time.perf_counter(), time.thread_time()
        for _ in run(runtime, request):
            pass
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    return {"wall": (wall - model.wall) * 1000 / tokens, "cpu": (cpu - model.cpu) * 1000 / tokens}
