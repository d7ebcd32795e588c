"""Speculative decoding: drafted tokens (``drafts``, ``model_draft``; named by ``sources``) verified
by the model in one pass under the exact acceptance rule (``rule``), switched off for a run whose
drafts are mostly rejected (``switch_off``). The loop that uses them is
``inference.decoding.generation``'s; the batch scheduler's verify step is ``inference.batching``'s."""

from inference.speculative.drafts import Draft, DraftSource, PromptLookup, lookup
from inference.speculative.model_draft import ModelDraft
from inference.speculative.rule import Check, judge, residual_pick
from inference.speculative.sources import DraftSources

__all__ = ["Check", "Draft", "DraftSource", "DraftSources", "ModelDraft", "PromptLookup", "judge", "lookup", "residual_pick"]
