"""The page's address format: the Python codec (playground/runs/address.py) and the page's own
(static/shared/js/address.js, run in Node) on one table of cases, and on random texts."""

from __future__ import annotations

import json
import random
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from playground.edge.param_facts import params_schema
from playground.runs.address import (
    decode_address,
    encode_address,
    param_text,
    run_texts,
    speculative_text,
    turns_text,
    turns_value,
)
from playground.runs.conversation import page_fields
from tests.js import module_url, run_js

CASES = json.loads((Path(__file__).parent / "address_cases.json").read_text(encoding="utf-8"))
SCHEMA = params_schema()

JS_CODEC = f"""
    import * as address from "{module_url("shared/js/address.js")}";
    const {{ schema, values, addresses, decode, turns = [], turnTexts = [], settings = [], speculative = [] }} = INPUT;
    console.log(JSON.stringify({{
      texts: values.map(({{ key, value }}) => address.paramText(schema, key, value)),
      queries: addresses.map((texts) => address.encodeAddress(schema, texts)),
      decoded: decode.map((query) => address.decodeAddress(schema, query)),
      turnTexts: turns.map((list) => address.turnsText(list)),
      turns: turnTexts.map((text) => address.turnsValue(text)),
      settings: settings.map((query) => address.settingsFromAddress(schema, query)),
      speculative: speculative.map((value) => address.speculativeText(value)),
      speculativeBack: speculative.map((value) => address.speculativeValue(address.speculativeText(value))),
    }}));
"""


def js_codec(values: list[dict], addresses: list[dict], decode: list[str], **more: list) -> dict:
    return run_js(JS_CODEC, {"schema": SCHEMA, "values": values, "addresses": addresses, "decode": decode, **more})


def test_both_codecs_write_each_value_as_its_control_shows_it():
    js = js_codec(CASES["values"], [], [])
    for case, from_js in zip(CASES["values"], js["texts"]):
        assert param_text(case["key"], case["value"]) == case["text"], case
        assert from_js == case["text"], case
    assert param_text("seed", 2**63 - 1) == "9223372036854775807"  # Python's int, exactly


def test_both_codecs_write_and_read_the_same_addresses():
    addresses = CASES["addresses"]
    unknown = CASES["unknown_keys_ignored"]
    js = js_codec([], [case["texts"] for case in addresses], [case["query"] for case in addresses] + [unknown["query"]])
    for case, query, decoded in zip(addresses, js["queries"], js["decoded"]):
        assert encode_address(case["texts"]) == case["query"], case["name"]
        assert query == case["query"], case["name"]
        assert decode_address(case["query"]) == case["texts"] == decoded, case["name"]
    assert decode_address(unknown["query"]) == unknown["texts"] == js["decoded"][-1]


def _random_text(rng: random.Random) -> str:
    alphabet = " \n\t&=+%#?/~*'!()[];:,.\"\\-_aZ09é漢😀\u2028\x7f"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))


def test_the_codecs_agree_byte_for_byte_on_random_texts():
    rng = random.Random(8)
    keys = [
        *("prompt", "mode", "system", "turns", "assistant_prefix", "top_n", "no_cache", "watch", "speculative"),
        *SCHEMA["properties"],
    ]
    cases = [{key: _random_text(rng) for key in rng.sample(keys, rng.randrange(1, 8))} for _ in range(300)]
    cases.append({"prompt": "a lone surrogate \ud800 reads as U+FFFD"})
    js = js_codec([], cases, [encode_address(case) for case in cases])
    for case, query, decoded in zip(cases, js["queries"], js["decoded"]):
        assert encode_address(case) == query
        clean = {k: v.encode("utf-16", "surrogatepass").decode("utf-16", "replace") for k, v in case.items()}
        assert decode_address(query) == clean == decoded


@pytest.mark.parametrize("use_cache, system", [(True, None), (False, "Be brief.")])
def test_a_runs_texts_set_every_control_a_fresh_page_would_not_show(use_cache, system):
    params = {
        **{k: p["default"] for k, p in SCHEMA["properties"].items()},
        "temperature": 1.0,
        "seed": 2**63 - 1,
        "stop": ["END"],
        "dry_sequence_breakers": [],
    }
    request = {"prompt": "Hi", "mode": "chat", "system": system, "top_n": 5, "use_cache": use_cache}
    texts = run_texts(request, params)
    assert texts["temperature"] == "1"  # the page starts at 0.7: a default is still written
    assert texts["seed"] == "9223372036854775807"
    assert texts["dry_sequence_breakers"] == ""  # emptied, unlike a fresh page's box
    assert "ignore_eos" not in texts and "logit_bias" not in texts  # empty, like a fresh page's
    assert ("no_cache" in texts) is (not use_cache) and ("system" in texts) is (system is not None)
    query = parse_qs(urlsplit("/?" + encode_address(texts)).query, keep_blank_values=True)
    assert query["stop"] == ["END"] and query["mode"] == ["chat"]


def test_both_codecs_write_and_read_chat_turns_alike():
    written, decoded = CASES["turns"], CASES["turns_decoded"]
    js = js_codec([], [], [], turns=[c["turns"] for c in written], turnTexts=[c["text"] for c in written + decoded])
    for case, from_js in zip(written, js["turnTexts"]):
        assert turns_text(case["turns"]) == case["text"] == from_js
    for case, from_js in zip(written + decoded, js["turns"]):
        assert turns_value(case["text"]) == case["turns"] == from_js, case["text"]


def test_the_page_reads_a_conversation_from_its_address_and_old_addresses_have_none():
    conversation = next(c for c in CASES["addresses"] if "turns" in c["texts"])
    old = [c["query"] for c in CASES["addresses"] if "turns" not in c["texts"]]
    js = js_codec([], [], [], settings=[conversation["query"], *old])
    read = js["settings"][0]
    assert read["turns"] == CASES["turns"][0]["turns"] and read["prefix"] == "The capital of Italy is"
    assert "turns" not in read["values"] and "assistant_prefix" not in read["values"]
    assert read["values"]["prompt"] == "And of Italy?" and read["values"]["system"] == "Be brief."
    for settings in js["settings"][1:]:
        assert settings["turns"] == [] and settings["prefix"] == ""


CONVERSATIONS = [
    # (messages, continue_final_message) → the page's system, turns, prompt and answer start
    (
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "Q1"},
            {"role": "assistant", "content": "A1"},
            {"role": "user", "content": "Q2"},
            {"role": "assistant", "content": "The answer"},
        ],
        True,
        {"system": "S", "turns": [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"}]}
        | {"prompt": "Q2", "assistant_prefix": "The answer"},
    ),
    (
        [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "Q2"}],
        False,
        {"system": None, "turns": [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"}]}
        | {"prompt": "Q2", "assistant_prefix": ""},
    ),
    (  # a blank system message stays a turn: the page would leave its blank box out
        [{"role": "system", "content": " "}, {"role": "user", "content": "Q1"}],
        False,
        {"system": None, "turns": [{"role": "system", "content": " "}], "prompt": "Q1", "assistant_prefix": ""},
    ),
    (  # ends with the assistant's turn, not continued: the page cannot drop its own last user turn
        [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"}],
        False,
        {"system": None, "turns": [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"}]}
        | {"prompt": "", "assistant_prefix": ""},
    ),
]


@pytest.mark.parametrize(("messages", "continued", "fields"), CONVERSATIONS)
def test_a_conversation_becomes_the_pages_fields_and_its_address(messages, continued, fields):
    assert page_fields(messages, continued) == fields
    request = {"mode": "chat", "top_n": 5, **fields}
    texts = run_texts(request, {})
    assert ("turns" in texts) is bool(fields["turns"]) and ("assistant_prefix" in texts) is bool(fields["assistant_prefix"])
    decoded = decode_address(encode_address(texts))
    assert turns_value(decoded.get("turns", "")) == fields["turns"]
    assert decoded.get("assistant_prefix", "") == fields["assistant_prefix"] and decoded["prompt"] == fields["prompt"]


def test_both_codecs_write_speculative_decoding_alike_and_a_runs_texts_keep_it():
    values = [
        {"draft": "prompt_lookup", "k": 4},
        {"k": 8, "draft": "fast"},
        None,
        {"draft": "fast", "k": 4, "switch_off": True},  # the default: not written
        {"switch_off": False, "draft": "fast", "k": 2},  # keep drafting: written
    ]
    js = js_codec([], [], [], speculative=values)
    assert [speculative_text(v) for v in values] == js["speculative"]
    assert js["speculative"] == [
        '{"draft":"prompt_lookup","k":4}',
        '{"draft":"fast","k":8}',
        "",
        '{"draft":"fast","k":4}',
        '{"draft":"fast","k":2,"switch_off":false}',
    ]
    assert js["speculativeBack"] == [
        {"draft": "prompt_lookup", "k": 4},
        {"draft": "fast", "k": 8},
        None,
        {"draft": "fast", "k": 4},
        {"draft": "fast", "k": 2, "switch_off": False},
    ]
    request = {"prompt": "def f(x):", "mode": "completion", "system": None, "top_n": 5, "use_cache": True}
    params = {k: p["default"] for k, p in SCHEMA["properties"].items()}
    assert run_texts(request, params | {"speculative": {"draft": "fast", "k": 2}})["speculative"] == '{"draft":"fast","k":2}'
    kept = {"draft": "fast", "k": 2, "switch_off": False}  # a saved run's params, as to_dict writes them
    assert run_texts(request, params | {"speculative": kept})["speculative"] == '{"draft":"fast","k":2,"switch_off":false}'
    assert "speculative" not in run_texts(request, params | {"speculative": None})
    assert "speculative" not in run_texts(request, params)  # runs saved before it
