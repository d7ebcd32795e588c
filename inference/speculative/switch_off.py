"""When a run stops drafting: the one rule that switches speculative decoding off where its drafts
cannot pay, so that speculation is never much slower than plain decoding. It looks twice:

- **before the first draft** (``cannot_pay``): the best a pass can do is every one of its k drafts
  accepted, k + 1 tokens for ``draft_cost(k) + pass_cost(k + 1)`` steps; when even that is no more
  tokens than steps, the run never drafts (no draft-model prefill, no pass) and decodes plainly;
- **as it goes** (``low_acceptance``): after ``SWITCH_OFF_AFTER`` judged drafts, as soon as its
  passes have made fewer tokens than the steps they cost.

Either way the run says why in the rule's own numbers (``SwitchedOff``). A run whose
``speculative.switch_off`` is false (to watch the drafts at work) is never switched off.

A verification pass feeds the pending token and m drafts (m + 1 tokens, with the logits of each)
and costs more than a one-token step: ``PASS_COST`` gives it in one-token steps, measured on the
real model on this 2-core machine, otherwise idle (one decoder call after 150 cached positions with
every position's logits, 2 threads, median of 12, interleaved, twice: S = 2 costs 1.7 steps,
3 → 1.85, 5 → 2.05, 9 → 2.5; the several-token path of the 4-bit kernels dequantizes every weight
once per call, and the head computes every position). Under a load of ~10 the same calls measured
2.1, 2.3, 2.65 and 3.2: a busy machine makes the rule stricter than it need be.
A pass yields 1 + the accepted drafts. Once a run has had ``SWITCH_OFF_AFTER`` drafted tokens
judged, it stops drafting for good when its passes have made fewer tokens than the plain steps
their cost would have bought; the rest of the run decodes plainly. For full drafts of k = 4 that is
an acceptance below about 0.5 (k = 8: about 0.55); a short draft costs less and needs less.

The cost counts the drafting too: ``DRAFT_TOKEN_COST`` gives what one drafted token costs in the
target's one-token steps — nothing for prompt lookup; for the ``fast`` draft model 0.9, measured
here as a run's whole drafting (catching its state up on the accepted tokens, then k − 1 steps and
k draws of its chain) per drafted token: `python -m inference.bench --speculative 4 --drafts fast`
on a quiet machine, 2 threads, its session not spinning between calls (``Decoder``'s
``spinning=False``; with spinning the two sessions' thread pools fight over the cores and a drafted
token cost ~1.7 steps). At that price even a pass of 4 drafts all accepted makes 5 tokens for
5.65 steps (at every k the best case costs more steps than it makes tokens): on this CPU a draft
model from the same 4-bit weights cannot pay for itself (its step is not cheap enough next to the
verification's), so the rule never lets it start. A first-L-layers (early-exit) draft costs less
per token but its drafts are almost never accepted (docs/speculative.md, Figures).

The costs are constants, not timed per run, so whether a seeded run drafts (and so which draws it
takes) never depends on how busy the machine is: it replays exactly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

SWITCH_OFF_AFTER = 8  # drafted tokens judged before the rule looks at a run
PASS_COST = {1: 1.0, 2: 1.7, 3: 1.85, 5: 2.05, 9: 2.5}  # tokens fed in one pass → its cost in one-token steps (measured)
DRAFT_TOKEN_COST = {"prompt_lookup": 0.0, "fast": 0.9}  # a drafted token's cost in the target's one-token steps (measured)


def pass_cost(tokens: int) -> float:
    """What a verification pass of ``tokens`` tokens costs in one-token steps (between measured
    sizes: linear; past the largest: its cost per token)."""
    sizes = sorted(PASS_COST)
    return float(np.interp(tokens, sizes, [PASS_COST[s] for s in sizes]))


def draft_cost(draft: str, tokens: int) -> float:
    """What drafting ``tokens`` tokens from source ``draft`` costs in the target's one-token steps
    (a source not in the table: as much as the target's own step, the honest guess for a model)."""
    return DRAFT_TOKEN_COST.get(draft, 1.0) * tokens


@dataclass(frozen=True)
class SwitchedOff:
    """Why a run went on without drafting: ``rule`` ``"cannot_pay"`` (before the first draft: one
    pass with all k drafts accepted would make ``tokens`` = k + 1 tokens for ``steps`` one-token
    steps) or ``"low_acceptance"`` (its passes so far made ``tokens`` tokens for ``steps``)."""

    rule: Literal["cannot_pay", "low_acceptance"]
    tokens: int
    steps: float  # rounded to 2 decimals: the figure the page shows

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def best_case(draft: str, k: int) -> tuple[int, float]:
    """One pass with every one of ``k`` drafts accepted: the tokens it makes (k + 1, the bonus
    included) and what it costs in one-token steps, drafting included."""
    return k + 1, draft_cost(draft, k) + pass_cost(k + 1)


def cannot_pay(draft: str, k: int) -> SwitchedOff | None:
    """The rule before the first draft: a ``SwitchedOff`` when even the best case makes no more
    tokens than the plain steps it costs (drafting from ``draft``, ``k`` at a time), else None."""
    tokens, steps = best_case(draft, k)
    return SwitchedOff("cannot_pay", tokens, round(steps, 2)) if tokens <= steps else None


def low_acceptance(checked: int, made: int, cost: float) -> SwitchedOff | None:
    """The rule as the run goes (``switch_off``), with its numbers when it holds."""
    return SwitchedOff("low_acceptance", made, round(cost, 2)) if switch_off(checked, made, cost) else None


def switch_off(checked: int, made: int, cost: float) -> bool:
    """Whether a run stops drafting: ``checked`` drafts judged so far, its verification passes
    ``made`` that many tokens at ``cost`` one-token steps (the sum of their ``pass_cost`` and
    ``draft_cost``)."""
    return checked >= SWITCH_OFF_AFTER and made < cost
