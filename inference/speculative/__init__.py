"""Speculative decoding: drafted tokens (``drafts``) verified by the model in one pass under the
exact acceptance rule (``rule``). The loop that uses them is ``inference.decoding.generation``'s."""

from inference.decoding.loop_params import SpeculativeParams
from inference.speculative.drafts import Draft, DraftSource, PromptLookup, lookup
from inference.speculative.model_draft import ModelDraft
from inference.speculative.rule import Check, judge, residual_pick


def new_draft_source(params: SpeculativeParams) -> DraftSource:
    """The draft source a run's ``speculative`` parameter names."""
    if params.draft == PromptLookup.name:
        return PromptLookup()
    raise ValueError(f"no draft source named {params.draft!r}")


__all__ = ["Check", "Draft", "DraftSource", "ModelDraft", "PromptLookup", "judge", "lookup", "new_draft_source", "residual_pick"]
