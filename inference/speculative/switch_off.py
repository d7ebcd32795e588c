"""When a run stops drafting: the one rule that switches speculative decoding off for a run whose
drafts are mostly rejected, so that speculation is never much slower than plain decoding.

A verification pass feeds the pending token and m drafts (m + 1 tokens, with the logits of each)
and costs more than a one-token step: ``PASS_COST`` gives it in one-token steps, measured on the
real model on this 2-core machine (one decoder call after 150 cached positions, 2 threads, median
of 12, interleaved: S = 2 costs 2.1 steps, 3 → 2.3, 5 → 2.65, 9 → 3.2; the several-token path of
the 4-bit kernels dequantizes every weight once per call, and the head computes every position).
A pass yields 1 + the accepted drafts. Once a run has had ``SWITCH_OFF_AFTER`` drafted tokens
judged, it stops drafting for good when its passes have made fewer tokens than the plain steps
their cost would have bought; the rest of the run decodes plainly. For full drafts of k = 4 that is
an acceptance below about 0.65 (k = 8: about 0.7); a short draft costs less and needs less. The
draft's own cost (nothing for prompt lookup; a draft model's steps) is not counted: the rule
judges whether the drafts are accepted often enough to pay for their verification.
"""

from __future__ import annotations

import numpy as np

SWITCH_OFF_AFTER = 8  # drafted tokens judged before the rule looks at a run
PASS_COST = {1: 1.0, 2: 2.1, 3: 2.3, 5: 2.65, 9: 3.2}  # tokens fed in one pass → its cost in one-token steps (measured)


def pass_cost(tokens: int) -> float:
    """What a verification pass of ``tokens`` tokens costs in one-token steps (between measured
    sizes: linear; past the largest: its cost per token)."""
    sizes = sorted(PASS_COST)
    return float(np.interp(tokens, sizes, [PASS_COST[s] for s in sizes]))


def switch_off(drafted: int, made: int, cost: float) -> bool:
    """Whether a run stops drafting: ``drafted`` drafts judged so far, its verification passes
    ``made`` that many tokens at ``cost`` one-token steps (the sum of their ``pass_cost``)."""
    return drafted >= SWITCH_OFF_AFTER and made < cost
