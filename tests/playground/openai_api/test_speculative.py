"""The HTTP API takes the websocket's ``speculative`` field on both endpoints (our extension):
greedy output is the plain run's, a whole answer carries the run's totals in its ``playground``
object, a stream carries the tokens as usual, and bad values are refused by field."""

from __future__ import annotations

import openai
import pytest

from tests.inference.speculative.test_greedy_real import CODE

pytestmark = pytest.mark.real_model

SPECULATIVE = {"speculative": {"draft": "prompt_lookup", "k": 4}}


def test_both_endpoints_take_speculative_and_give_the_plain_output(api_server, model_id):
    client = openai.OpenAI(base_url=api_server.url + "/v1", api_key="unused", max_retries=0, timeout=300)
    common = {"model": model_id, "max_tokens": 40, "temperature": 0}
    plain = client.completions.create(prompt=CODE, **common)
    assert "speculative" not in plain.model_extra["playground"]
    fast = client.completions.create(prompt=CODE, **common, extra_body=SPECULATIVE)
    assert fast.choices[0].text == plain.choices[0].text
    extension = fast.model_extra["playground"]
    totals = extension["speculative"]
    assert extension["params"]["speculative"] == SPECULATIVE["speculative"] | {"switch_off": True}
    assert totals["accepted"] > 0 and totals["verifications"] > 0
    assert totals["drafted"] >= totals["checked"] >= totals["accepted"]  # one definition: SpeculativeTotals
    assert sum(t["drafted"] for t in fast.choices[0].model_extra["playground"]["tokens"]) == totals["accepted"]
    streamed = client.completions.create(prompt=CODE, stream=True, **common, extra_body=SPECULATIVE)
    assert "".join(chunk.choices[0].text for chunk in streamed if chunk.choices) == plain.choices[0].text
    messages = [{"role": "user", "content": "Say hello."}]
    chat_plain = client.chat.completions.create(messages=messages, **common)
    chat = client.chat.completions.create(messages=messages, **common, extra_body=SPECULATIVE)
    assert chat.choices[0].message.content == chat_plain.choices[0].message.content
    assert chat.model_extra["playground"]["speculative"]["drafted"] >= 0


@pytest.mark.parametrize(
    ("speculative", "extra", "param"),
    [
        ({"k": 9}, {}, "speculative.k"),
        ({"draft": "oracle"}, {}, "speculative.draft"),
        ({"switch_off": "no"}, {}, "speculative.switch_off"),
        ({"k": 2}, {"n": 2}, "speculative"),
    ],
)
def test_bad_speculative_values_are_refused_by_field(api_server, model_id, speculative, extra, param):
    client = openai.OpenAI(base_url=api_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    with pytest.raises(openai.BadRequestError) as refused:
        client.completions.create(model=model_id, prompt="x", max_tokens=2, extra_body={"speculative": speculative, **extra})
    assert refused.value.body["param"] == param
