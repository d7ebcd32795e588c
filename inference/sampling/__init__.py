"""The sampler chain: how the next token is picked from the model's logits, stage by stage.

Pure numpy; nothing here imports Django. Definitions, ranges and a worked example:
docs/sampling.md.

Default order (``DEFAULT_ORDER``; ``SamplingParams.sampler_order`` may permute it, e.g. with
temperature last as llama.cpp does). Only enabled stages are in a chain. Each stage declares its
name, fields and on-rule beside its class; ``stages.STAGES`` lists them in this order, and the list
below is written from them by ``python -m inference.sampling.stages --write docs/sampling.md``
(``stage_table.stage_list()``):

     1. grammar             remove every token the JSON Schema / regex / choice forbids here
     2. logit_bias          logit += bias[id]
     3. repetition_penalty  CTRL: a seen token's logit / penalty if > 0, x penalty if <= 0
     4. frequency_penalty   logit -= count x value
     5. presence_penalty    logit -= value if count > 0
     6. dry                 penalize tokens that would extend a repeated sequence
     7. no_repeat_ngram     remove tokens that would repeat an n-gram
     8. top_n_sigma         keep logit >= max - n x sigma
     9. temperature         logit / T (T = 0: one-hot on the top token); the chain ends here when temperature == 0
    10. dynamic_temperature entropy-scaled T, instead of temperature when dynatemp_range > 0
    11. top_k               keep the k most likely
    12. top_p               keep the smallest prefix with cumulative probability >= top_p
    13. min_p               keep p >= min_p x p_max
    14. typical_p           locally typical: keep the most typical tokens up to typical_p mass
    15. epsilon_cutoff      remove p < epsilon
    16. eta_cutoff          remove p < min(eta, sqrt(eta) exp(-H))
    17. xtc                 sometimes remove all top choices but the least likely of them (needs a seed)
    18. mirostat            mirostat v2: keep surprise <= mu, then adapt mu to the target tau
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
from inference.sampling.stages import STAGES, XTC_STREAM, breaker_ids_for
from inference.sampling.trace import Alternative, StageCount, StepTrace, Watched

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
