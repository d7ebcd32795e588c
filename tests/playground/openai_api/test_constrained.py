"""Constrained decoding through the official ``openai`` client against a real daphne serving the
real model: ``response_format`` (json_schema, json_object) and the ``grammar`` extension (regex,
choice) on both endpoints, streamed and not; every output that finished validates, a
``max_tokens`` cut is ``length``, bad constraints are 400s naming the body's field. The schemas
are bounded (a string of at most 10 characters, an integer up to 120), so every constrained output
here is complete well within its 40 tokens: a ``length`` among them would be a failure too."""

from __future__ import annotations

import json
import re
import urllib.request

import jsonschema
import openai
import pytest

pytestmark = pytest.mark.real_model

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 10}, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
PERSON_FORMAT = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
ASK = "Describe a person as JSON with a name and an age."
PHONE = {"type": "regex", "pattern": "[0-9]{3}-[0-9]{4}"}
CHOICE = {"type": "choice", "options": ["yes", "no", "maybe"]}


@pytest.fixture(scope="module")
def client(api_server) -> openai.OpenAI:
    return openai.OpenAI(base_url=api_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def run(
    client, model_id: str, kind: str, stream: bool, prompt: str = ASK, max_tokens: int = 40, **fields
) -> list[tuple[str, str, list[dict], int]]:
    """Each choice's (text, finish_reason, traces, how many tokens its logprobs list), read the way
    a client reads the answer."""
    if kind == "chat":
        create, start = client.chat.completions.create, {"messages": [{"role": "user", "content": prompt}]}
    else:
        create, start = client.completions.create, {"prompt": prompt + "\n"}
        if "response_format" in fields:  # (the client's completions take it only in the body)
            fields["extra_body"] = fields.get("extra_body", {}) | {"response_format": fields.pop("response_format")}
    answer = create(model=model_id, max_tokens=max_tokens, seed=7, stream=stream, **start, **fields)
    if not stream:
        return [
            (
                c.message.content if kind == "chat" else c.text,
                c.finish_reason,
                c.model_extra["playground"]["tokens"],
                listed(c.logprobs, kind),
            )
            for c in answer.choices
        ]
    texts: dict[int, str] = {}
    finish: dict[int, str] = {}
    traces: dict[int, list[dict]] = {}
    logprobs: dict[int, int] = {}
    for chunk in answer:
        for c in chunk.choices:
            piece = (c.delta.content or "") if kind == "chat" else c.text
            texts[c.index] = texts.get(c.index, "") + piece
            traces.setdefault(c.index, []).extend((c.model_extra.get("playground") or {}).get("tokens", []))
            logprobs[c.index] = logprobs.get(c.index, 0) + listed(c.logprobs, kind)
            if c.finish_reason is not None:
                finish[c.index] = c.finish_reason
    return [(texts[i], finish[i], traces[i], logprobs[i]) for i in sorted(texts)]


def listed(logprobs, kind: str) -> int:
    """How many tokens a choice's (or a chunk's) ``logprobs`` lists."""
    if logprobs is None:
        return 0
    return len(logprobs.content or []) if kind == "chat" else len(logprobs.tokens or [])


def grammar_removed_tokens(traces: list[dict]) -> bool:
    """Some step's trace shows the grammar stage removing tokens (its kept count, an alternative's
    ``removed_by``)."""
    removed = any(a["removed_by"] == "grammar" for t in traces for a in t["alternatives"])
    stages = [s for t in traces for s in t["stages"] if s["name"] == "grammar"]
    return removed and len(stages) == len(traces)


@pytest.mark.parametrize("temperature", [0, 0.7, 1.2])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", ["chat", "completion"])
def test_strict_json_schema_outputs_validate(client, model_id, kind, stream, temperature):
    logprobs = {"logprobs": True, "top_logprobs": 3} if kind == "chat" else {"logprobs": 3}
    choices = run(client, model_id, kind, stream, response_format=PERSON_FORMAT, temperature=temperature, n=2, **logprobs)
    assert len(choices) == 2
    for text, finish, traces, logprobs in choices:
        assert finish == "stop", text
        jsonschema.validate(json.loads(text), PERSON)
        assert grammar_removed_tokens(traces)
        assert logprobs == len(traces) - (kind == "chat")  # a chat's logprobs leave out its <|im_end|>


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", ["chat", "completion"])
def test_json_object_is_a_json_object(client, model_id, kind, stream):
    prompt = 'Answer with a JSON object whose only key "ok" is true.'
    ((text, finish, _, _),) = run(client, model_id, kind, stream, prompt, response_format={"type": "json_object"}, temperature=0)
    assert finish == "stop", text
    assert isinstance(json.loads(text), dict)


@pytest.mark.parametrize("kind", ["chat", "completion"])
def test_regex_and_choice_through_the_grammar_extension(client, model_id, kind):
    phone = run(client, model_id, kind, False, "A phone number:", temperature=1.0, n=2, extra_body={"grammar": PHONE})
    for text, finish, traces, _ in phone:
        assert finish == "stop" and re.fullmatch(PHONE["pattern"], text), text
        assert grammar_removed_tokens(traces)
    answer = run(client, model_id, kind, True, "Is the sky blue?", temperature=0.7, extra_body={"grammar": CHOICE})
    for text, finish, _, _ in answer:
        assert finish == "stop" and text in CHOICE["options"], text


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_max_tokens_cut_is_length_and_incomplete(client, model_id, stream):
    ((text, finish, traces, _),) = run(
        client, model_id, "chat", stream, response_format=PERSON_FORMAT, temperature=0, max_tokens=4
    )
    assert finish == "length" and len(traces) == 4
    assert text.startswith('{"')
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "objekt"}}}},
            "response_format.json_schema.schema",
        ),
        ({"extra_body": {"grammar": {"type": "regex", "pattern": "([0-9]"}}}, "grammar.pattern"),
        ({"response_format": {"type": "json_object"}, "extra_body": {"grammar": PHONE}}, "response_format"),
        ({"response_format": {"type": "json_schema", "json_schema": {"schema": PERSON}}}, "response_format.json_schema.name"),
    ],
)
@pytest.mark.parametrize("kind", ["chat", "completion"])
def test_bad_constraints_are_400s_naming_the_field(client, model_id, kind, fields, param):
    with pytest.raises(openai.BadRequestError) as caught:
        run(client, model_id, kind, False, **fields)
    error = caught.value.body
    assert caught.value.status_code == 400
    assert error["param"] == param and error["type"] == "invalid_request_error"
    assert param in error["message"]


def test_the_saved_run_keeps_the_constraint(client, api_server, model_id):
    answer = client.chat.completions.create(
        model=model_id, messages=[{"role": "user", "content": ASK}], max_tokens=40, temperature=0, response_format=PERSON_FORMAT
    )
    extension = answer.model_extra["playground"]
    assert extension["params"]["grammar"] == {"type": "json_schema", "schema": PERSON}
    with urllib.request.urlopen(extension["permalink"] + ".json") as saved:
        params = json.load(saved)["run"]["request"]["params"]
    assert json.dumps(params["grammar"]) == json.dumps({"type": "json_schema", "schema": PERSON})  # its order too
    with urllib.request.urlopen(extension["permalink"]) as page:
        assert 'data-param="grammar"' in page.read().decode()
