"""How a token got where it is: its ``Origin``, one fact per token, decided here once.

The generation loop gives every ``TokenStep`` its origin; the websocket's ``token`` event, the
HTTP trace, saved runs and every view of the page read it (docs/websocket-api.md, ``origin``):

- ``sampled``: the final pick drew u and u fell in this token's segment;
- ``greedy``: temperature 0, the most likely token taken, nothing drawn;
- ``forced_by_grammar``: the grammar left this one token, so no draw could pick another;
- ``draft``: a speculative draft the model accepted (its draw is the acceptance draw);
- ``corrected``: sampled in place of a draft the model rejected, from what the draft left,
  max(0, p − q) (its event's draw is the acceptance test's, not the one that picked it; a greedy
  run's correction is its own pick: ``greedy``);
- ``typed``: written by the person (edit and continue), forced;
- ``branch``: the alternative the person picked to branch on, forced;
- ``kept``: forced from the run this one continues, where this run's own pick would have taken
  another token (other settings, or another draw); a kept token this run's pick takes anyway is
  ``sampled`` / ``greedy`` / ``forced_by_grammar``, as it would have been without the prefix;
- ``prompt``: a prompt token, scored, never chosen (``prompt_surprisal`` and "Score this text").

A request says which of its forced prefix tokens the person typed (``typed_tokens``, the last
ones) and whether the one before them is a branch's alternative (``branched``): ``PrefixPlan``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from inference.sampling.trace import StepTrace

GRAMMAR_STAGE = "grammar"  # the stage whose single survivor is ``forced_by_grammar``


class Origin(StrEnum):
    SAMPLED = "sampled"
    GREEDY = "greedy"
    FORCED_BY_GRAMMAR = "forced_by_grammar"
    DRAFT = "draft"
    CORRECTED = "corrected"
    TYPED = "typed"
    BRANCH = "branch"
    KEPT = "kept"
    PROMPT = "prompt"

    @property
    def drawn(self) -> bool:
        """The token was chosen by the final pick's draw u (the draw bar shows where u fell)."""
        return self is Origin.SAMPLED

    @property
    def chosen_by_person(self) -> bool:
        return self in (Origin.TYPED, Origin.BRANCH)


# The origins a token of a run may have (a prompt token's is never a ``token`` event's).
TOKEN_ORIGINS = tuple(o for o in Origin if o is not Origin.PROMPT)


def grammar_left_one(trace: StepTrace) -> bool:
    """The grammar stage kept exactly one token, where the stages before it had left more."""
    before: int | None = None  # the stage before the grammar's count (None: the raw set, always more)
    for stage in trace.stages:
        if stage.name == GRAMMAR_STAGE:
            return stage.kept == 1 and (before is None or before > 1)
        before = stage.kept
    return False


def picked_origin(trace: StepTrace, drafted: bool | None = None) -> Origin:
    """The origin of a token the loop chose itself. ``drafted``: None for a plain pick; in a
    speculative step, True for an accepted draft, False for the token drawn in place of a rejected one."""
    if drafted:
        return Origin.DRAFT
    if grammar_left_one(trace):
        return Origin.FORCED_BY_GRAMMAR
    if trace.draw is None:
        return Origin.GREEDY  # (a greedy correction is the model's own pick: greedy)
    return Origin.SAMPLED if drafted is None else Origin.CORRECTED


@dataclass(frozen=True)
class PrefixPlan:
    """Which forced prefix tokens the person chose: the last ``typed`` were typed, and with
    ``branched`` the one before them is the alternative picked as a branch; the others are kept
    from the run the request continues."""

    length: int
    typed: int = 0
    branched: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.typed <= self.length:
            raise ValueError(f"typed_tokens must be from 0 to the prefix's length ({self.length}), got {self.typed}")
        if self.branched and self.typed >= self.length:
            raise ValueError("branched needs a prefix token before the typed ones (the alternative picked)")

    @property
    def branch_index(self) -> int | None:
        return self.length - self.typed - 1 if self.branched else None

    def origin(self, index: int, trace: StepTrace) -> Origin:
        """The origin of prefix token ``index``, traced as ``trace`` (``trace.own_pick``: what this
        run's own pick took at that step)."""
        if index >= self.length - self.typed:
            return Origin.TYPED
        if index == self.branch_index:
            return Origin.BRANCH
        return picked_origin(trace) if trace.own_pick == trace.token else Origin.KEPT
