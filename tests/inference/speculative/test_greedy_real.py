"""Greedy speculative decoding on the real model gives the plain run's tokens, token for token,
and prompt lookup pays where the text repeats its prompt (code)."""

from __future__ import annotations

import pytest

from inference.decoding.generation import GenerationRequest, TokenStep, Verification, run
from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.sampling import SamplingParams

pytestmark = pytest.mark.real_model

# Code whose continuation repeats its lines: lookup drafts pay from the start, so the run is not
# switched off (on a function body this small model's drafts are mostly rejected early on).
CODE = (
    "INSERT INTO users (id, name) VALUES (1, 'alice');\nINSERT INTO users (id, name) VALUES (2, 'bob');\n"
    "INSERT INTO users (id, name) VALUES (3, 'carol');\n"
)
SUMMARY = "Summarise: The cat sat on the mat. The mat was red. The cat was happy on the red mat.\nSummary:"
STORY = "Once upon a time, in a village by the sea,"


def greedy(prompt: str, speculative: SpeculativeParams | None) -> GenerationRequest:
    return GenerationRequest(
        prompt,
        sampling=SamplingParams(temperature=0.0),
        loop=LoopParams(max_tokens=64, ignore_eos=True),
        speculative=speculative,
    )


@pytest.mark.parametrize(("prompt", "k"), [(CODE, 4), (SUMMARY, 8), (STORY, 2)])
def test_greedy_with_speculation_is_greedy_without_it(real_runtime, prompt, k):
    plain = [i.token_id for i in run(real_runtime, greedy(prompt, None)) if isinstance(i, TokenStep)]
    items = list(run(real_runtime, greedy(prompt, SpeculativeParams(k=k))))
    assert [i.token_id for i in items if isinstance(i, TokenStep)] == plain
    assert len(plain) == 64
    if prompt is CODE:  # the code repeats its prompt: lookup drafts, and the model accepts many
        totals = items[-1].speculative
        assert totals.accepted >= 16 and sum(isinstance(i, Verification) for i in items) < 64
