"""An OpenAI body → our frame → the same frames parser: defaults, mapping and errors naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference.decoding.loop_params import LoopParams
from playground.openai_api.errors import ApiError
from playground.openai_api.param_table import BEGIN, END, parameter_table
from playground.openai_api.translate import COMPLETION_MAX_TOKENS, translate

MODEL = "SmolLM2-135M-Instruct"  # the manifest's name, accepted for the id smollm2-135m-instruct
SERVED = ("smollm2-135m-instruct", "gemma-3-270m")
DOCS = Path(__file__).resolve().parents[3] / "docs" / "openai-api.md"


def completion(**fields):
    return translate({"model": MODEL, "prompt": "Hi", **fields}, "completion", SERVED)


def chat(**fields):
    return translate({"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], **fields}, "chat", SERVED)


def test_openai_defaults_and_our_keys_at_the_top_level():
    request = completion(top_k=5, mirostat=2, seed=3)
    params = request.job.request.params_dict()
    assert params["max_tokens"] == COMPLETION_MAX_TOKENS
    assert (params["temperature"], params["top_p"], params["n"]) == (1.0, 1.0, 1)
    assert (params["top_k"], params["mirostat"], params["seed"]) == (5, 2, 3)
    assert chat().job.request.params_dict()["max_tokens"] == LoopParams().max_tokens
    assert chat(max_completion_tokens=7).job.request.params_dict()["max_tokens"] == 7


def test_logprobs_set_the_alternatives_and_the_job_is_the_websockets():
    request = completion(logprobs=3)
    assert request.logprobs == 3 and request.job.request.top_n == 3
    request = chat(logprobs=True, top_logprobs=0)
    assert request.logprobs == 0 and request.job.request.top_n == 5
    assert chat().logprobs is None
    turns = chat(messages=[{"role": "developer", "content": "S"}, {"role": "user", "content": [{"type": "text", "text": "Q"}]}])
    assert turns.job.request.chat.to_list() == [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]


@pytest.mark.parametrize(
    ("make", "fields", "status", "param"),
    [
        (completion, {"temperature": -1}, 400, "temperature"),
        (completion, {"logit_bias": {"x": 1}}, 400, "logit_bias.x"),
        (completion, {"stop": ["x"] * 9}, 400, "stop"),
        (completion, {"n": 9}, 400, "n"),
        (completion, {"logprobs": True}, 400, "logprobs"),
        (completion, {"max_tokens": 0}, 400, "max_tokens"),
        (completion, {"suffix": "x"}, 400, "suffix"),
        (completion, {"prompt": ["a", "b"]}, 400, "prompt"),
        (completion, {"prompt": ""}, 400, "prompt"),
        (completion, {"stream_options": {"include_usage": True}}, 400, "stream_options"),
        (completion, {"num_beams": 2}, 400, "num_beams"),
        (completion, {"model": "gpt-4"}, 404, "model"),
        (completion, {"top_n": 99}, 400, "top_n"),
        (chat, {"messages": [{"role": "tool", "content": "x"}]}, 400, "messages.0.role"),
        (chat, {"messages": []}, 400, "messages"),
        (chat, {"top_logprobs": 2}, 400, "top_logprobs"),
        (chat, {"tools": [{"type": "function"}]}, 400, "tools"),
        (chat, {"response_format": {"type": "json_object"}}, 400, "response_format"),
        (chat, {"max_tokens": 2, "max_completion_tokens": 2}, 400, "max_completion_tokens"),
        (chat, {"frequency_penalty": 3}, 400, "frequency_penalty"),
        (chat, {"dry_multiplier": "a lot"}, 400, "dry_multiplier"),
    ],
)
def test_bad_fields_are_named(make, fields, status, param):
    with pytest.raises(ApiError) as caught:
        make(**fields)
    assert (caught.value.status, caught.value.param) == (status, param)
    assert "params." not in caught.value.message


def test_the_docs_parameter_table_is_the_generated_one():
    text = DOCS.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:end] == parameter_table(), "regenerate with python -m playground.openai_api.param_table"


def test_echo_with_logprobs_scores_the_prompt_first():
    request = completion(echo=True, logprobs=2, max_tokens=0)
    assert request.score is not None and request.score.prompt == "Hi" and request.score.top_n == 2
    assert request.generate is False and request.echo == "Hi"
    assert completion(echo=True).score is None and completion(echo=True).generate is True


def test_null_means_not_given_for_openais_optional_fields():
    request = chat(temperature=None, stop=None, max_tokens=None, logit_bias=None, n=None, logprobs=None, top_logprobs=None)
    params = request.job.request.params_dict()
    assert (params["temperature"], params["stop"], params["n"], params["logit_bias"]) == (1.0, [], 1, {})
    assert request.logprobs is None
    with pytest.raises(ApiError) as caught:
        chat(top_k=None)  # ours stay strict: null is no integer
    assert caught.value.param == "top_k"


def test_the_model_is_named_by_id_or_manifest_name_and_travels_in_the_job():
    assert completion().model == "smollm2-135m-instruct"
    assert completion().job.model == "smollm2-135m-instruct"
    gemma = translate({"model": "gemma-3-270m", "prompt": "Hi"}, "completion", SERVED)
    assert (gemma.model, gemma.job.model) == ("gemma-3-270m", "gemma-3-270m")
    scored = translate({"model": "GEMMA-3-270M", "prompt": "Hi", "echo": True, "logprobs": 1}, "completion", SERVED)
    assert scored.score is not None and scored.score.model == "gemma-3-270m"


def test_a_model_not_served_is_a_404_naming_model_and_the_served_ones():
    with pytest.raises(ApiError) as caught:
        translate({"model": "gemma-3-270m", "prompt": "Hi"}, "completion", ("smollm2-135m-instruct",))
    assert (caught.value.status, caught.value.param, caught.value.code) == (404, "model", "model_not_found")
    assert "smollm2-135m-instruct" in caught.value.message
