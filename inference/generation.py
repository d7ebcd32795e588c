"""One run: prompt in, a stream of traced tokens out, until a stopping rule ends it.

The loop follows the seed texts' pipeline, one token per ``step``:

1. feed the token chosen last time to the decoder (the prompt once, at the start) → logits [V];
2. hand the logits and the history to the sampler chain, which picks a token with the run's own
   ``numpy.random.Generator`` and says what each stage did;
3. turn the token's bytes into text that never splits a character and never shows a stop string;
4. end on the model's end-of-sequence token, a stop string, ``max_tokens``, or a cancel.

``Generation`` has the shape ``start`` / ``step`` / ``is_done`` / ``finish``; whoever drives it
checks its cancel flag between steps, so a cancel ends the run within one token.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Literal

import numpy as np

from inference.runtime import Runtime
from inference.sampling import SamplerChain, SamplingParams, StepTrace
from inference.stopping import StoppingParams, StopStringMatcher
from inference.text import Mode, Utf8Stream

StopReason = Literal["eos", "stop", "max_tokens", "cancelled"]
SEED_BITS = 63


@dataclass(frozen=True)
class GenerationRequest:
    prompt: str
    mode: Mode = "completion"
    system: str | None = None
    sampling: SamplingParams = field(default_factory=SamplingParams)
    stopping: StoppingParams = field(default_factory=StoppingParams)
    top_n: int = 5
    use_cache: bool = True

    def with_seed(self) -> "GenerationRequest":
        """The same request with a seed: the client's, or one drawn now so the run can be replayed."""
        if self.sampling.seed is not None:
            return self
        return replace(self, sampling=replace(self.sampling, seed=secrets.randbits(SEED_BITS)))

    def params_dict(self) -> dict[str, Any]:
        return {**self.sampling.to_dict(), **self.stopping.to_dict()}


@dataclass(frozen=True)
class Started:
    request: GenerationRequest  # as run: the seed filled in
    prompt_ids: list[int]

    @property
    def seed(self) -> int:
        return int(self.request.sampling.seed)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TokenStep:
    index: int
    token_id: int
    text: str  # the output text this token releases; may be empty
    trace: StepTrace
    elapsed_ms: float


@dataclass(frozen=True)
class Finished:
    reason: StopReason
    stop_string: str | None
    text: str
    tail: str  # text released only at the end: held back by an unfinished character or stop-string prefix
    prompt_tokens: int
    completion_tokens: int
    time_to_first_token_ms: float | None
    decode_tokens_per_s: float | None
    total_ms: float


class Generation:
    def __init__(self, runtime: Runtime, request: GenerationRequest) -> None:
        self.runtime = runtime
        self.request = request.with_seed()
        self.seed: int = self.request.sampling.seed  # type: ignore[assignment]
        self.chain = SamplerChain(self.request.sampling, token_texts=runtime.codec.token_texts())
        self._rng = np.random.default_rng(self.seed)
        self._stopping = self.request.stopping
        self._state = runtime.decoder.new_state(batch_size=1, use_cache=request.use_cache)
        self._utf8 = Utf8Stream()
        self._stops = StopStringMatcher(self._stopping.stop)
        self.prompt_ids: list[int] = []
        self.generated: list[int] = []
        self._text: list[str] = []
        self._logits: np.ndarray | None = None  # [V] for the next position
        self._pending: int | None = None  # chosen but not yet fed to the decoder
        self._reason: StopReason | None = None
        self._stop_string: str | None = None
        self._started_at = 0.0
        self._first_token_at: float | None = None
        self._last_token_at: float | None = None

    def start(self) -> Started:
        """Encodes the prompt, checks it fits, and runs the prefill."""
        self._started_at = time.perf_counter()
        codec = self.runtime.codec
        self.prompt_ids = codec.encode(self.request.prompt, self.request.mode, self.request.system)
        self._stopping.check_context(len(self.prompt_ids), self.runtime.shape.context_window)
        self.request.sampling.validate_for_vocab(self.runtime.shape.vocab_size)
        self._logits = self._state.append_tokens(self.prompt_ids)[0]
        return Started(self.request, self.prompt_ids)

    def is_done(self) -> bool:
        return self._reason is not None

    def cancel(self) -> None:
        if self._reason is None:
            self._reason = "cancelled"

    def step(self) -> TokenStep:
        """Picks the next token and says what it releases."""
        if self._reason is not None or self._logits is None:
            raise RuntimeError("step() after the run ended or before start()")
        began = time.perf_counter()
        if self._pending is not None:
            self._logits = self._state.append_tokens([self._pending])[0]
            self._pending = None
        index = len(self.generated)
        logits = self._suppress_eos(self._logits) if index < self._stopping.min_tokens else self._logits
        trace = self.chain.step(logits, self._history(), self._rng, top_n=self.request.top_n)
        token = int(trace.token)
        self.generated.append(token)
        text = self._release(token, index)
        if self._reason is None and len(self.generated) >= self._stopping.max_tokens:
            self._reason = "max_tokens"
            text += self._flush()
        if self._reason is None:
            self._pending = token
        now = time.perf_counter()
        if self._first_token_at is None:
            self._first_token_at = now
        self._last_token_at = now
        self._text.append(text)
        return TokenStep(index, token, text, trace, (now - began) * 1000.0)

    def finish(self) -> Finished:
        """The summary once the run has ended; a cancelled run releases what it held back."""
        if self._reason is None:
            raise RuntimeError("finish() before the run ended")
        tail = self._flush() if self._reason == "cancelled" else ""
        text = "".join(self._text) + tail
        first, last = self._first_token_at, self._last_token_at
        ttft = None if first is None else (first - self._started_at) * 1000.0
        decode_rate = None
        if first is not None and last is not None and len(self.generated) > 1 and last > first:
            decode_rate = (len(self.generated) - 1) / (last - first)
        return Finished(
            reason=self._reason,
            stop_string=self._stop_string,
            text=text,
            tail=tail,
            prompt_tokens=len(self.prompt_ids),
            completion_tokens=len(self.generated),
            time_to_first_token_ms=ttft,
            decode_tokens_per_s=decode_rate,
            total_ms=(time.perf_counter() - self._started_at) * 1000.0,
        )

    def _history(self) -> list[int]:
        if self._stopping.penalize_prompt:
            return self.prompt_ids + self.generated
        return self.generated

    def _suppress_eos(self, logits: np.ndarray) -> np.ndarray:
        masked = logits.copy()
        masked[list(self.runtime.codec.eos_ids)] = -np.inf
        return masked

    def _release(self, token: int, index: int) -> str:
        """The text this token lets out, ending the run on end-of-sequence or a stop string."""
        is_eos = token in self.runtime.codec.eos_ids and not self._stopping.ignore_eos
        if is_eos:
            self._reason = "eos"
            return self._flush()
        text = self._utf8.push(self.runtime.codec.token_bytes(token))
        if index + 1 < self._stopping.min_tokens:
            return text  # stop strings count only from min_tokens on
        released, stop = self._stops.push(text)
        if stop is not None:
            self._reason = "stop"
            self._stop_string = stop
        return released

    def _flush(self) -> str:
        released, stop = self._stops.push(self._utf8.finish())
        if stop is not None:
            self._stop_string = stop
            self._reason = "stop"
            return released
        return released + self._stops.finish()


def run(
    runtime: Runtime,
    request: GenerationRequest,
    is_cancelled: Callable[[], bool] = lambda: False,
) -> Iterator[Started | TokenStep | Finished]:
    """Drives one generation to its end, checking ``is_cancelled`` before every token."""
    generation = Generation(runtime, request)
    yield generation.start()
    while not generation.is_done():
        if is_cancelled():
            generation.cancel()
            break
        yield generation.step()
    yield generation.finish()
