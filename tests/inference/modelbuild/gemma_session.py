"""Driving a built Gemma decoder directly (the engine's inputs, ``position_ids`` included), for the
Gemma build tests on the tiny and the real model."""

from __future__ import annotations

import numpy as np

from inference.model_dir import SLIDING_MASK


def forward(session, ids: list[int], past: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One forward pass of ``ids`` after ``past``: every position's logits [n, V] and the new cache."""
    done = next(iter(past.values())).shape[2]
    feed = {
        "input_ids": np.array([ids], np.int64),  # [1, n]
        "attention_mask": np.ones((1, done + len(ids)), np.int64),  # [1, past + n]
        "position_ids": np.arange(done, done + len(ids), dtype=np.int64)[None, :],  # [1, n]
        "logits_to_keep": np.array(0, np.int64),
        **past,
    }
    if SLIDING_MASK in {i.name for i in session.get_inputs()}:  # the sliding layers' buffers hold every position here
        feed[SLIDING_MASK] = feed["attention_mask"]
    names = [o.name for o in session.get_outputs()]
    out = dict(zip(names, session.run(None, feed)))
    return out["logits"][0], {p: out[p.replace("past_key_values", "present")] for p in past}
