"""Stages that remove tokens by a rule on their logits or probabilities.

Each sees the distribution renormalized over the tokens still in the running, keeps at least one
token, and breaks ties in favour of the lower token id.
"""

from __future__ import annotations

import math

import numpy as np

from inference.sampling.candidates import Candidates, key_prefix, prob_prefix, top_positions
from inference.sampling.stages.base import Stage, StepContext
from inference.sampling.stages.declaration import Declaration, ParamIs
from inference.sampling.stages.fields import Integer, Number, require

TOP_K = Integer(
    "top_k",
    0,
    "0 = off",
    low=0,
    label="Top-k",
    about="Keep only the k most likely tokens.",
    definition="keep the k most likely tokens (ties: lower id first).",
)
TOP_P = Number(
    "top_p",
    1.0,
    "1 = off",
    low=0.0,
    low_open=True,
    high=1.0,
    label="Top-p",
    about="Nucleus: keep the fewest top tokens whose probabilities add up to p.",
    definition="nucleus: sort by probability descending (ties: lower id first), keep the smallest prefix whose cumulative probability is >= top_p.",
)
MIN_P = Number(
    "min_p",
    0.0,
    "0 = off",
    low=0.0,
    high=1.0,
    label="Min-p",
    about="Keep tokens at least this fraction as likely as the top token.",
    definition="keep tokens with p >= min_p × p_max (computed as `logit − max >= ln min_p`).",
)
TYPICAL_P = Number(
    "typical_p",
    1.0,
    "1 = off",
    low=0.0,
    low_open=True,
    high=1.0,
    label="Typical-p",
    about="Keep the tokens whose surprise is closest to the step's average surprise, up to mass p.",
    definition="Meister et al.: sort by |−ln p − H| ascending (H the entropy in nats; ties: lower id first), keep the smallest prefix with cumulative probability >= typical_p.",
)
TOP_N_SIGMA = Number(
    "top_n_sigma",
    0.0,
    "0 or null = off",
    nullable=True,
    low=0.0,
    label="Top-nσ",
    about="Keep tokens whose logit is within n standard deviations of the top logit.",
    definition="Tang et al.: keep logits >= max − n·σ, σ the population standard deviation of the candidates' logits.",
)
EPSILON_CUTOFF = Number(
    "epsilon_cutoff",
    0.0,
    "0 = off",
    low=0.0,
    high=1.0,
    high_open=True,
    label="Epsilon cutoff",
    about="Remove tokens with probability below ε.",
    definition="Hugging Face: remove tokens with p < ε.",
)
ETA_CUTOFF = Number(
    "eta_cutoff",
    0.0,
    "0 = off",
    low=0.0,
    high=1.0,
    high_open=True,
    label="Eta cutoff",
    about="Remove tokens below min(η, √η·e^−H): a cutoff that loosens when the step is uncertain.",
    definition="Hugging Face: remove tokens with p < min(η, √η·e^(−H)).",
)


class TopK(Stage):
    """Keep the k most likely tokens (ties: lower id first)."""

    name = "top_k"

    def __init__(self, k: int) -> None:
        self.k = TOP_K.check(k)
        require(k >= 1, "top_k", "top_k must be >= 1 (0 = off)")

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        if self.k >= len(cand):
            return cand
        return cand.keep_positions(top_positions(cand.logits, self.k))


class TopP(Stage):
    """Nucleus (Holtzman et al.): sorted by probability descending (ties: lower id first), keep the
    smallest prefix whose cumulative probability is >= top_p."""

    name = "top_p"

    def __init__(self, top_p: float) -> None:
        self.top_p = TOP_P.check(top_p)

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        soft = cand.softmax
        head = prob_prefix(soft.e, self.top_p * soft.z, strict=False, soft=soft)
        return cand if head is None else cand.keep_positions(head)


class MinP(Stage):
    """Keep tokens whose probability is >= min_p x the highest probability (Nguyen et al.).
    p / p_max = exp(logit - max), so the test is logit - max >= ln(min_p)."""

    name = "min_p"

    def __init__(self, min_p: float) -> None:
        self.min_p = MIN_P.check(min_p)
        self._log_min_p = math.log(min_p) if min_p > 0 else -math.inf

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        return cand.keep(cand.logits - cand.logits.max() >= self._log_min_p)


class TypicalP(Stage):
    """Locally typical sampling (Meister et al.): sort by |-ln p - H| ascending (H the entropy,
    ties: lower id first) and keep the smallest prefix with cumulative probability >= typical_p."""

    name = "typical_p"

    def __init__(self, typical_p: float) -> None:
        self.typical_p = TYPICAL_P.check(typical_p)

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        soft = cand.softmax
        surprise = soft.log_z - soft.d  # -ln p
        head = key_prefix(np.abs(surprise - soft.entropy), soft.p, self.typical_p)
        return cand.keep_positions(head)


class TopNSigma(Stage):
    """Top-n-sigma (Tang et al.): keep tokens whose logit is >= max - n x sigma, sigma the
    population standard deviation of the candidates' logits."""

    name = "top_n_sigma"

    def __init__(self, n: float) -> None:
        self.n = TOP_N_SIGMA.check(n)
        require(self.n > 0, "top_n_sigma", "top_n_sigma must be > 0 (0 = off)")

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        logits = cand.logits
        top = float(logits.max())
        # sigma^2 = mean(s^2) - mean(s)^2 with s = (logit - max) / scale: shifting by the max avoids
        # cancellation, scaling avoids overflow for huge logits.
        s = logits - top
        scale = max(-float(s.min()), 1e-300)
        s /= scale
        mean = float(s.sum()) / len(s)
        sigma = scale * math.sqrt(max(0.0, float(np.einsum("i,i->", s, s)) / len(s) - mean * mean))
        return cand.keep(logits >= top - self.n * sigma)


class EpsilonCutoff(Stage):
    """Hugging Face's epsilon sampling (Hewitt et al.): remove tokens with probability < epsilon."""

    name = "epsilon_cutoff"

    def __init__(self, epsilon: float) -> None:
        self.epsilon = EPSILON_CUTOFF.check(epsilon)
        require(epsilon > 0, "epsilon_cutoff", "epsilon_cutoff must be > 0 (0 = off)")

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        soft = cand.softmax
        return cand.keep(soft.e >= self.epsilon * soft.z)


class EtaCutoff(Stage):
    """Hugging Face's eta sampling (Hewitt et al.): remove tokens with probability <
    min(eta, sqrt(eta) x exp(-H)), H the entropy of the distribution (nats)."""

    name = "eta_cutoff"

    def __init__(self, eta: float) -> None:
        self.eta = ETA_CUTOFF.check(eta)
        require(eta > 0, "eta_cutoff", "eta_cutoff must be > 0 (0 = off)")

    def threshold(self, cand: Candidates) -> float:
        return min(self.eta, math.sqrt(self.eta) * math.exp(-cand.softmax.entropy))

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        soft = cand.softmax
        return cand.keep(soft.e >= self.threshold(cand) * soft.z)


TOP_N_SIGMA_STAGE = Declaration(
    TopNSigma,
    "keep logit >= max - n x sigma",
    params=(TOP_N_SIGMA,),
    on=(ParamIs("top_n_sigma", ">", 0.0),),
    title="Top-nσ",
    group="truncation",
)
TOP_K_STAGE = Declaration(
    TopK, "keep the k most likely", params=(TOP_K,), on=(ParamIs("top_k", ">", 0),), title="Top-k", group="truncation"
)
TOP_P_STAGE = Declaration(
    TopP,
    "keep the smallest prefix with cumulative probability >= top_p",
    params=(TOP_P,),
    on=(ParamIs("top_p", "<", 1.0),),
    title="Nucleus (top-p)",
    group="truncation",
)
MIN_P_STAGE = Declaration(
    MinP, "keep p >= min_p x p_max", params=(MIN_P,), on=(ParamIs("min_p", ">", 0.0),), title="Min-p", group="truncation"
)
TYPICAL_P_STAGE = Declaration(
    TypicalP,
    "locally typical: keep the most typical tokens up to typical_p mass",
    params=(TYPICAL_P,),
    on=(ParamIs("typical_p", "<", 1.0),),
    title="Locally typical (typical-p)",
    group="truncation",
)
EPSILON_CUTOFF_STAGE = Declaration(
    EpsilonCutoff,
    "remove p < epsilon",
    params=(EPSILON_CUTOFF,),
    on=(ParamIs("epsilon_cutoff", ">", 0.0),),
    title="Epsilon cutoff",
    group="truncation",
)
ETA_CUTOFF_STAGE = Declaration(
    EtaCutoff,
    "remove p < min(eta, sqrt(eta) exp(-H))",
    params=(ETA_CUTOFF,),
    on=(ParamIs("eta_cutoff", ">", 0.0),),
    title="Eta cutoff",
    group="truncation",
)
