"""One run: prompt in, a stream of traced tokens out, until a stopping rule ends it.

The loop is the seed texts' "run model, sample one token, append to sequence", one token per
sample per ``step``:

1. feed the tokens chosen last time to the decoder (the prompt once, at the start) → logits [n, V];
2. hand each sample's logits and history to its own sampler chain, which picks a token with the
   sample's own ``numpy.random.Generator`` and says what each stage did;
3. turn the token's bytes into text that never splits a character and never shows a stop string;
4. end a sample on the model's end-of-sequence token, a stop string, ``max_tokens``, or a cancel.

``n`` samples of one prompt run as one batch through the decoder; sample i is seeded with
``sample_seed(seed, i)`` = (seed + i) mod 2^63, so every seed a client may send works for every ``n``. A sample that has ended is fed an end-of-sequence token to keep the batch rectangular
and its logits are ignored.

A run's own logic lives in a *program* (``Generation`` for sampling, ``BeamRun`` for beam search)
that never calls the decoder: ``prepare`` gives the ids to prefill, ``advance`` takes the logits of
its rows and returns the step's ``TokenStep``s (or one ``BeamStep``), ``feed`` says which tokens
its rows get next (and, for beams, which row's cache each continues). Two drivers feed programs
logits: ``SoloDriver`` on a decoder state of the run's own (``run`` below), and
``inference.batching.scheduler.Scheduler``, which decodes many programs' rows in one batch per step. Both
take the same tokens for the same logits.

A run with ``speculative`` set is driven by ``SpeculativeDriver``: each step feeds the pending
token and a few drafted ones in one pass, ``Generation.verify`` judges the drafts in order by the
exact acceptance rule on the chain's distributions, and the cache is cut back past the rejected
ones (docs/speculative.md). Its steps yield a ``Verification`` before their ``TokenStep``s.

The rooms: the request (``request``: one type, checked once), what a run reports (``results``),
what a program is to its driver (``program``), the sampling program (``sampling_program``), beam
search (``beam``) and the solo drivers (``solo``). This module puts them together: ``new_program``
and ``run``, and the names of each room, as it has always given them.

Whoever drives a program checks its cancel flag between steps, so a cancel ends the run within one
token. The prompt is fed in chunks (``inference.prefill``) with the flag checked between them, so
even a long prefill stops within one chunk; a run cancelled before its prefill is over raises
``Cancelled`` and never announces itself (no ``Started``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from inference.decoding.beam import BeamRun, BeamStep, Hypothesis
from inference.decoding.program import (
    Feed,
    Program,
    StepClock,
    encode_prompt,
    hold_off_end,
    penalized_history,
    without_tokens,
)
from inference.decoding.request import (
    SEED_BITS,
    GenerationRequest,
    check_prefix,
    check_token_ids,
    check_watch,
    sample_seed,
)
from inference.decoding.results import (
    Finished,
    SampleResult,
    SpeculativeTotals,
    Started,
    StopReason,
    TokenStep,
    Verification,
)
from inference.decoding.sampling_program import Generation, check_prefix_grammar
from inference.decoding.solo import SoloDriver, SpeculativeDriver
from inference.errors import Cancelled
from inference.runtime import Runtime
from inference.speculative import DraftSources

# The loop's rooms, named here too (the names this module has always given).
__all__ = [
    "SEED_BITS",
    "BeamRun",
    "BeamStep",
    "Feed",
    "Finished",
    "Generation",
    "GenerationRequest",
    "Hypothesis",
    "Program",
    "SampleResult",
    "SoloDriver",
    "SpeculativeDriver",
    "SpeculativeTotals",
    "Started",
    "StepClock",
    "StopReason",
    "TokenStep",
    "Verification",
    "check_prefix",
    "check_prefix_grammar",
    "check_token_ids",
    "check_watch",
    "encode_prompt",
    "hold_off_end",
    "new_program",
    "penalized_history",
    "run",
    "sample_seed",
    "without_tokens",
]


def new_program(runtime: Runtime, request: GenerationRequest, drafts: DraftSources | None = None) -> Generation | BeamRun:
    """The program for a request: beam search when ``num_beams`` > 1, else sampling (a speculative
    run's draft source made by ``drafts``)."""
    return BeamRun(runtime, request) if request.loop.num_beams > 1 else Generation(runtime, request, drafts=drafts)


def run(
    runtime: Runtime,
    request: GenerationRequest,
    is_cancelled: Callable[[], bool] = lambda: False,
    drafts: DraftSources | None = None,
) -> Iterator[Started | TokenStep | BeamStep | Verification | Finished]:
    """Drives one generation (sampling or beam search) to its end on a decoder state of its own,
    checking ``is_cancelled`` before every token. A cancel that comes before the prefill is over
    raises ``Cancelled``: nothing ran that is worth keeping. ``drafts`` makes a speculative run's
    draft source (default: prompt lookup only)."""
    program = new_program(runtime, request, drafts)
    driver = (
        SpeculativeDriver(runtime, program)
        if isinstance(program, Generation) and program.drafter
        else SoloDriver(runtime, program)
    )
    started = driver.start(is_cancelled)
    if is_cancelled():
        raise Cancelled("cancelled during the prefill")
    yield started
    while not program.is_done():
        if is_cancelled():
            program.cancel()
            break
        yield from driver.step()
    yield program.finish()
