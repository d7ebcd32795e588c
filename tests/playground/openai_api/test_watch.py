"""The HTTP API's trace extension follows watched tokens (``watch``, our extension) as the websocket does."""

from __future__ import annotations

import openai
import pytest

pytestmark = pytest.mark.real_model


def test_each_token_trace_carries_the_watched_tokens(api_server, model_id):
    client = openai.OpenAI(base_url=api_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    answer = client.completions.create(
        model=model_id, prompt="The capital of France is", max_tokens=3, temperature=0, extra_body={"watch": [38034, 7042]}
    )
    tokens = answer.choices[0].model_extra["playground"]["tokens"]
    assert [w["id"] for w in tokens[0]["watched"]] == [38034, 7042]
    paris = tokens[0]["watched"][1]
    assert tokens[0]["id"] == 7042 and (paris["raw_prob"], paris["prob"], paris["rank"]) == (tokens[0]["raw_prob"], 1.0, 1)
    assert tokens[0]["watched"][0]["removed_by"] == "temperature"  # temperature 0 keeps one token
    with pytest.raises(openai.BadRequestError) as refused:
        client.completions.create(model=model_id, prompt="x", max_tokens=1, extra_body={"watch": list(range(9))})
    assert refused.value.body["param"] == "watch"
