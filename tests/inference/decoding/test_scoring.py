"""A prompt's own log-probabilities, chunked, against one whole pass computed here."""

from __future__ import annotations

import numpy as np
import pytest

from inference.decoding import scoring
from inference.errors import Cancelled


def test_scores_are_the_log_softmax_of_each_position_given_the_ones_before(tiny_runtime, monkeypatch):
    monkeypatch.setattr(scoring, "SCORE_CHUNK", 3)  # several chunks on a short prompt
    ids = tiny_runtime.codec.encode("the quick brown fox jumps over the lazy dog", "completion")
    scores = scoring.score_prompt(tiny_runtime, ids, top_n=4)
    assert [s.token_id for s in scores] == ids and scores[0].logprob is None and scores[0].top == ()
    logits = tiny_runtime.decoder.new_state(1).append_tokens(ids, all_logits=True)[0].astype(np.float64)  # [S, V]
    log_probs = (
        logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) - logits.max(-1, keepdims=True)
    )
    for position in range(1, len(ids)):
        row = log_probs[position - 1]
        assert scores[position].logprob == pytest.approx(row[ids[position]], abs=1e-4)
        expected = sorted(range(row.shape[0]), key=lambda i: (-row[i], i))[:4]
        assert [i for i, _ in scores[position].top] == expected
        assert [lp for _, lp in scores[position].top] == sorted((lp for _, lp in scores[position].top), reverse=True)


def test_scoring_stops_when_cancelled(tiny_runtime):
    ids = tiny_runtime.codec.encode("hello there", "completion")
    with pytest.raises(Cancelled):
        scoring.score_prompt(tiny_runtime, ids, top_n=1, is_cancelled=lambda: True)
