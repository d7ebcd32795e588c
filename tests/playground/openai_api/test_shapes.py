"""Our run's events → OpenAI's shapes, where OpenAI's semantics differ from the run's own: where
``text_offset`` counts from, which tokens ``usage.prompt_tokens`` counts, which tokens a chat's
``logprobs.content`` lists. The events are written as the worker sends them (docs/websocket-api.md)."""

from __future__ import annotations

from typing import Any

from playground.openai_api.shapes import Responder, echo_only
from playground.openai_api.translate import translate

MODEL = "SmolLM2-135M-Instruct"
SERVED = ("smollm2-135m-instruct",)
DOCUMENT_START = {"id": 0, "text": "<|endoftext|>"}
IM_END = 2
END_IDS = frozenset({IM_END, 0})
PROMPT = "The capital of France is"


def started(prompt_tokens: list[dict[str, Any]], n: int = 1) -> dict[str, Any]:
    return {
        "type": "started",
        "seed": 1,
        "params": {"n": n},
        "prompt_tokens": prompt_tokens,
        "model": {"manifest_sha256": "0" * 64},
    }


def token(token_id: int, text: str, shown: str | None = None, probability: float = 0.5) -> dict[str, Any]:
    return {
        "type": "token",
        "request_id": "r",
        "sample": 0,
        "id": token_id,
        "token": text if shown is None else shown,
        "text": text,
        "raw_prob": probability,
        "alternatives": [{"id": token_id, "token": shown or text, "raw_prob": probability}],
    }


def done(reason: str, text: str, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    sample = {"sample": 0, "reason": reason, "text": text, "tail": "", "completion_tokens": completion_tokens}
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_completion_tokens": completion_tokens}
    return {"type": "done", "samples": [sample], "usage": usage}


def responder(api, prompt_tokens, scores=None) -> Responder:
    return Responder(api, started(prompt_tokens), lambda run_id: f"/r/{run_id}", END_IDS, scores)


PROMPT_TOKENS = [DOCUMENT_START, {"id": 504, "text": "The"}, {"id": 3575, "text": " capital"}, {"id": 282, "text": " of"}]
PARIS = [token(7042, " Paris"), token(28, ","), token(260, " the")]


def test_text_offset_counts_from_the_prompts_start_without_echo():
    api = translate({"model": MODEL, "prompt": PROMPT, "logprobs": 1}, "completion", SERVED)
    whole = responder(api, PROMPT_TOKENS)
    for event in PARIS:
        whole.observe(event)
    answer = whole.complete(done("max_tokens", " Paris, the", len(PROMPT_TOKENS), 3))
    assert answer["choices"][0]["logprobs"]["text_offset"] == [len(PROMPT), len(PROMPT) + 6, len(PROMPT) + 7]
    stream = responder(api, PROMPT_TOKENS)
    offsets = [stream.token_chunk(event)["choices"][0]["logprobs"]["text_offset"] for event in PARIS]
    assert offsets == [[len(PROMPT)], [len(PROMPT) + 6], [len(PROMPT) + 7]]


def test_with_echo_the_prompt_is_at_0_and_the_completion_right_after_it():
    api = translate({"model": MODEL, "prompt": "The capital of", "logprobs": 1, "echo": True}, "completion", SERVED)
    top = [{"token": "x", "logprob": -1.0}]
    scores = {"tokens": [{"token": "<|endoftext|>", "logprob": None, "top": []}]}
    scores["tokens"] += [{"token": t["text"], "logprob": -2.0, "top": top} for t in PROMPT_TOKENS[1:]]
    whole = responder(api, PROMPT_TOKENS, scores)
    whole.observe(PARIS[0])
    answer = whole.complete(done("max_tokens", " Paris", len(PROMPT_TOKENS), 1))
    logprobs = answer["choices"][0]["logprobs"]
    assert logprobs["tokens"] == ["The", " capital", " of", " Paris"]
    assert logprobs["text_offset"] == [0, 3, 11, 14]
    assert "".join(logprobs["tokens"]) == answer["choices"][0]["text"]


def test_echoed_offsets_count_characters_where_a_token_ends_inside_one():
    prompt = "🎉 ok"  # its first character is two tokens of two bytes each
    api = translate({"model": MODEL, "prompt": prompt, "logprobs": 0, "echo": True}, "completion", SERVED)
    pieces = ["<0xF0><0x9F>", "<0x8E><0x89>", " ok"]
    scores = {"tokens": [{"token": text, "logprob": -1.0, "top": []} for text in ["<|endoftext|>", *pieces]]}
    whole = responder(api, PROMPT_TOKENS, scores)
    whole.observe(PARIS[0])
    offsets = whole.complete(done("max_tokens", " Paris", 4, 1))["choices"][0]["logprobs"]["text_offset"]
    assert offsets == [0, 0, 1, len(prompt)]


def test_usage_counts_the_prompts_own_tokens_which_echo_lists_every_one_of():
    api = translate({"model": MODEL, "prompt": "The capital of", "logprobs": 0, "echo": True}, "completion", SERVED)
    whole = responder(api, PROMPT_TOKENS)
    whole.observe(PARIS[0])
    usage = whole.complete(done("max_tokens", " Paris", len(PROMPT_TOKENS), 1))["usage"]
    assert usage == {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    scores = {"tokens": [{"token": t["text"], "logprob": -1.0, "top": []} for t in PROMPT_TOKENS]}
    scored_only = translate(
        {"model": MODEL, "prompt": "The capital of", "logprobs": 0, "echo": True, "max_tokens": 0}, "completion", SERVED
    )
    answer, _ = echo_only(scored_only, scores, "0" * 64)
    assert answer["usage"]["prompt_tokens"] == len(answer["choices"][0]["logprobs"]["tokens"]) == 3


def test_a_chats_prompt_tokens_are_all_counted():
    api = translate({"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]}, "chat", SERVED)
    chat_tokens = [{"id": 1, "text": "<|im_start|>"}, {"id": 4093, "text": "user"}]
    whole = responder(api, chat_tokens)
    whole.observe(PARIS[0])
    assert whole.complete(done("max_tokens", " Paris", 2, 1))["usage"]["prompt_tokens"] == 2


def chat_events() -> list[dict[str, Any]]:
    return [token(19842, "Paris"), token(30, "."), token(IM_END, "", shown="<|im_end|>")]


def test_a_chats_logprobs_list_the_messages_tokens_and_not_the_end_of_turn():
    api = translate({"model": MODEL, "messages": [{"role": "user", "content": "Capital?"}], "logprobs": True}, "chat", SERVED)
    whole = responder(api, [])
    for event in chat_events():
        whole.observe(event)
    answer = whole.complete(done("eos", "Paris.", 10, 3))
    choice = answer["choices"][0]
    assert [entry["token"] for entry in choice["logprobs"]["content"]] == ["Paris", "."]
    assert bytes(b for entry in choice["logprobs"]["content"] for b in entry["bytes"]).decode() == choice["message"]["content"]
    assert answer["usage"]["completion_tokens"] == 3  # every generated token, the end of turn included
    assert [t["token"] for t in choice["playground"]["tokens"]] == ["Paris", ".", "<|im_end|>"]
    stream = responder(api, [])
    listed = [
        entry["token"] for event in chat_events() for entry in stream.token_chunk(event)["choices"][0]["logprobs"]["content"]
    ]
    assert listed == ["Paris", "."]


def test_with_ignore_eos_an_end_token_is_content_like_any_other():
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Capital?"}], "logprobs": True, "ignore_eos": True}
    whole = responder(translate(body, "chat", SERVED), [])
    events = chat_events()
    events[-1]["text"] = "<|im_end|>"  # with ignore_eos its bytes are in the text
    for event in events:
        whole.observe(event)
    choice = whole.complete(done("max_tokens", "Paris.<|im_end|>", 10, 3))["choices"][0]
    assert [entry["token"] for entry in choice["logprobs"]["content"]] == ["Paris", ".", "<|im_end|>"]
