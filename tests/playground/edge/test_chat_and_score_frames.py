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


async def test_a_generate_asking_for_prompt_scores_gets_them_from_its_prefill_as_the_score_frame_gives_them():
    communicator = await connect()
    prompt = "The capital of France is Paris"
    await communicator.send_json_to({"type": "score", "request_id": "s", "prompt": prompt, "top_n": 3})
    (scores,) = await events_until_end(communicator, "s", "prompt_scores")
    frame = {"type": "generate", "request_id": "g", "prompt": prompt, "top_n": 3, "prompt_scores": True}
    await communicator.send_json_to(frame | {"params": {"temperature": 0, "max_tokens": 1}})
    events = await events_until_end(communicator, "g")
    assert [e["type"] for e in events] == ["started", "prompt_surprisal", "token", "done"]
    started, surprisal = events[0], events[1]
    assert started["prompt_scores"] is True
    assert (surprisal["offset"], surprisal["count"]) == (0, len(started["prompt_tokens"]))
    tokens = surprisal["tokens"]
    assert [t["id"] for t in tokens] == [t["id"] for t in scores["tokens"]]
    assert tokens[0]["prob"] is None and tokens[0]["rank"] is None and tokens[0]["alternatives"] == []
    for mine, theirs in zip(tokens[1:], scores["tokens"][1:]):
        assert mine["logprob"] == pytest.approx(theirs["logprob"], abs=5e-3)
        assert [a["id"] for a in mine["alternatives"]] == [a["id"] for a in theirs["top"]]
        assert mine["rank"] >= 1 and mine["entropy"] >= 0
        # "Score this text" gets each token's rank and entropy too (its entropy tint shows them)
        assert theirs["rank"] == mine["rank"] and theirs["entropy"] == pytest.approx(mine["entropy"], abs=5e-3)
    assert scores["tokens"][0]["rank"] is None and scores["tokens"][0]["entropy"] is None
    bits = -math.fsum(t["logprob"] for t in tokens[1:]) / math.log(2)
    assert surprisal["total_bits"] == pytest.approx(bits)
    assert surprisal["perplexity"] == pytest.approx(2 ** (bits / (len(tokens) - 1)))
    await communicator.disconnect()


async def test_a_generate_that_does_not_ask_gets_no_prompt_scores():
    communicator = await connect()
    await communicator.send_json_to({"type": "generate", "request_id": "g", "prompt": "Hi", "params": {"max_tokens": 1}})
    events = await events_until_end(communicator, "g")
    assert [e["type"] for e in events] == ["started", "token", "done"] and events[0]["prompt_scores"] is False
    await communicator.disconnect()
