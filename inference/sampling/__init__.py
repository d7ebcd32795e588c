"""The sampler chain: how the next token is picked from the model's logits, stage by stage.

Pure numpy; nothing here imports Django. Definitions, ranges and a worked example:
docs/sampling.md.

Default order (``DEFAULT_ORDER``; ``SamplingParams.sampler_order`` may permute it, e.g. with
temperature last as llama.cpp does). Only enabled stages are in a chain. Each stage declares its
name, fields, on-rule and builder beside its class; ``stages.STAGES`` lists them in this order, and
the list below is made from them on import (``stage_table.stage_list()``):

    {stages}
    then the final pick: one u = rng.random() per token, inverse CDF over the tokens sorted by
    final probability descending (ties: lower id first); greedy draws nothing.

The grammar comes first of all, so every later stage (penalties, truncation, the pick) works among
the tokens the constraint allows. Penalties come next so they act on the model's own scores; the filters that look at logits
(top_n_sigma) come before temperature, which is what makes them temperature-independent; the
probability filters come after temperature, so they see the distribution actually sampled.

Where the trace measures things: ``raw_prob`` is the softmax of the model's logits before any
stage; ``prob`` is the final distribution the token is drawn from. The alternatives shown to
users are the top-N tokens by raw probability. ``draw_interval`` is the chosen token's segment of
the final distribution in the pick's order, whatever its rank: the draw u that picked it lies in it.
``watched`` follows tokens the caller names, with the same two probabilities and a rank in each
(raw: ordered as the alternatives; final: in the pick's order), however low they rank.
"""

from inference.sampling.chain import SamplerChain, pick
from inference.sampling.params import DEFAULT_ORDER, SamplingParams
from inference.sampling.stage_table import stage_list
from inference.sampling.stages import STAGES, XTC_STREAM, breaker_ids_for
from inference.sampling.trace import Alternative, StageCount, StepTrace, Watched

if __doc__:  # (python -OO strips docstrings)
    __doc__ = __doc__.replace("    {stages}\n", stage_list())

__all__ = [
    "SamplingParams",
    "SamplerChain",
    "StepTrace",
    "Alternative",
    "StageCount",
    "Watched",
    "DEFAULT_ORDER",
    "STAGES",
    "XTC_STREAM",
    "breaker_ids_for",
    "pick",
]
