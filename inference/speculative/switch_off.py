"""When a run stops drafting: the one rule that switches speculative decoding off for a run whose
drafts are mostly rejected, so that speculation is never much slower than plain decoding.

A verification pass of the pending token and m drafts costs more than a one-token step (the
decoder computes m + 1 positions), and it yields 1 + the accepted drafts. Once a run has had
``SWITCH_OFF_AFTER`` drafted tokens judged, it stops drafting for good when fewer than
``MIN_ACCEPTANCE`` of them were accepted; the rest of the run decodes plainly. docs/speculative.md
says how the threshold was chosen from the measured cost of a verification pass.
"""

from __future__ import annotations

SWITCH_OFF_AFTER = 8  # drafted tokens judged before the rule looks at a run
MIN_ACCEPTANCE = 0.3  # accepted / drafted below which speculation is switched off for the run


def switch_off(drafted: int, accepted: int) -> bool:
    """Whether a run that has had ``drafted`` drafts judged, ``accepted`` of them accepted, stops drafting."""
    return drafted >= SWITCH_OFF_AFTER and accepted < MIN_ACCEPTANCE * drafted
