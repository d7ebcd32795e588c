"""The answer to a ``score`` job: the prompt's tokens with their log-probabilities (``prompt_scores``).

Made on the worker's decode thread (``inference.decoding.scoring``); the HTTP API's ``echo`` with
``logprobs`` reads it (docs/openai-api.md), and a websocket client may ask for it too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inference.decoding.scoring import score_prompt
from inference.runtime import Runtime
from playground.wire.jobs import Score


def answer(model: Runtime, command: Score, is_cancelled: Callable[[], bool]) -> dict[str, Any]:
    ids = model.codec.encode(command.prompt, command.mode, command.system, command.chat)  # type: ignore[arg-type]
    scores = score_prompt(model, ids, command.top_n, is_cancelled)
    text = model.codec.token_text
    return {
        "type": "prompt_scores",
        "request_id": command.request_id,
        "tokens": [
            {
                "id": score.token_id,
                "token": text(score.token_id),
                "logprob": score.logprob,
                "rank": score.rank,
                "entropy": score.entropy,
                "top": [{"id": i, "token": text(i), "logprob": lp} for i, lp in score.top],
            }
            for score in scores
        ],
    }
