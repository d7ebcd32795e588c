"""Small tools for the sampler tests: hand-made distributions and a scripted random source."""

from __future__ import annotations

import math

import numpy as np

from inference.sampling import SamplerChain, SamplingParams


def logits_for(probs) -> np.ndarray:
    """Logits whose softmax is ``probs`` (log of each)."""
    return np.log(np.asarray(probs, dtype=np.float64))


def dist(logits, history=(), **params) -> np.ndarray:
    return SamplerChain(SamplingParams(**params)).distribution(np.asarray(logits, dtype=np.float64), history)


def kept(logits, history=(), **params) -> list[int]:
    """Token ids with nonzero final probability."""
    return [int(i) for i in np.flatnonzero(dist(logits, history, **params))]


def softmax(values) -> np.ndarray:
    """A plain textbook softmax used to state expectations (not the chain's code)."""
    m = max(values)
    w = [math.exp(v - m) for v in values]
    s = sum(w)
    return np.array([x / s for x in w])


class ScriptedRng:
    """Stands in for numpy's Generator: ``random()`` returns the given values in turn and counts
    the calls; it raises if asked for more than it was given."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)
        self.calls = 0

    def random(self) -> float:
        if self.calls >= len(self.values):
            raise AssertionError("the chain drew more random numbers than expected")
        self.calls += 1
        return self.values[self.calls - 1]


# A hand-made vocabulary for the grammar stage: id 0 is the end of sequence, the rest are text.
HAND_TOKENS: tuple[bytes, ...] = (
    b"<eos>", b"a", b"b", b"ab", b"{", b"}", b'"', b":", b"1", b"2",
    b" ", b"yes", b"no", b"y", b"n", b"e", b"s", b"o", b",", b"x",
)  # fmt: skip


class HandVocab(list):
    """Token texts for ``HAND_TOKENS`` with their grammar vocabulary, as ``TextCodec.token_texts()``
    gives a real model's."""

    def __init__(self) -> None:
        from inference.sampling.stages import GrammarVocabulary

        super().__init__(t.decode() for t in HAND_TOKENS)
        self.grammar_vocabulary = GrammarVocabulary.from_token_bytes(HAND_TOKENS, [0])

    def id(self, text: str) -> int:
        return self.index(text)
