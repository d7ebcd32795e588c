"""Continuous batching on the real model: three runs of different prompts and settings decoded in
one batch give the tokens and draws each gives alone, their probabilities within the rounding."""

from __future__ import annotations

import pytest

from inference.batching.scheduler import Scheduler

from .test_scheduler import Listener, assert_same_as_alone, drain, request, submit_all

pytestmark = pytest.mark.real_model


PROB_ROUNDING = 1e-4  # measured on this model: logits within ~8e-5 of the solo run's, probabilities closer


def test_three_runs_batched_give_their_solo_tokens_and_draws(real_runtime):
    scheduler = Scheduler(real_runtime, max_batch=8)
    listeners = [
        Listener(request("The capital of France is", max_tokens=12)),
        Listener(request("Once upon a time", temperature=0.8, seed=42, max_tokens=16)),
        Listener(request("Write a haiku about the sea:", temperature=1.0, seed=7, n=2, max_tokens=10)),
    ]
    submit_all(scheduler, listeners[:2])
    drain(scheduler, listeners, joining={3: listeners[2:]})  # the third joins mid-stream
    for listener in listeners:
        assert_same_as_alone(real_runtime, listener, PROB_ROUNDING)
