"""The websocket's chat conversations, unsaved runs and prompt scores, with the real model behind
the embedded worker."""

from __future__ import annotations

import math

import pytest

from playground.runs.models import Run
from tests.playground.edge.test_consumer import connect, events_until_end

pytestmark = [pytest.mark.real_model, pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_messages_and_save_false():
    communicator = await connect()
    turns = [
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "And of Spain?"},
    ]
    frame = {
        "type": "generate",
        "request_id": "c",
        "messages": turns,
        "save": False,
        "params": {"temperature": 0, "max_tokens": 2},
    }
    await communicator.send_json_to(frame)
    events = await events_until_end(communicator, "c")
    started, done = events[0], events[-1]
    assert started["type"] == "started" and "run_id" not in started and started["mode"] == "chat"
    fed = "".join(t["text"] for t in started["prompt_tokens"])
    assert fed.endswith("<|im_start|>user\nAnd of Spain?<|im_end|>\n<|im_start|>assistant\n")
    assert "<|im_start|>assistant\nParis.<|im_end|>" in fed
    assert done["type"] == "done" and done["run_id"] is None
    assert not await Run.objects.filter(prompt="And of Spain?").aexists()
    await communicator.disconnect()


async def test_score_gives_each_prompt_tokens_log_probability():
    communicator = await connect()
    await communicator.send_json_to({"type": "score", "request_id": "s", "prompt": "The capital of France is", "top_n": 3})
    (answer,) = await events_until_end(communicator, "s", "prompt_scores")
    assert answer["type"] == "prompt_scores"
    tokens = answer["tokens"]
    assert tokens[0]["token"] == "<|endoftext|>" and tokens[0]["logprob"] is None
    assert "".join(t["token"] for t in tokens[1:]) == "The capital of France is"
    for token in tokens[1:]:
        assert token["logprob"] <= 0 and len(token["top"]) == 3
        assert token["top"][0]["logprob"] >= token["logprob"]
        assert math.fsum(math.exp(t["logprob"]) for t in token["top"]) <= 1 + 1e-9
    await communicator.disconnect()
