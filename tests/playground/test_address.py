"""The page's address format: the Python codec (playground/address.py) and the page's own
(static/playground/js/address.js, run in Node) on one table of cases, and on random texts."""

from __future__ import annotations

import json
import random
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from playground.address import decode_address, encode_address, param_text, run_texts
from playground.param_facts import params_schema
from tests.js import module_url, run_js

CASES = json.loads((Path(__file__).parent / "address_cases.json").read_text(encoding="utf-8"))
SCHEMA = params_schema()

JS_CODEC = f"""
    import * as address from "{module_url("playground/js/address.js")}";
    const {{ schema, values, addresses, decode }} = INPUT;
    console.log(JSON.stringify({{
      texts: values.map(({{ key, value }}) => address.paramText(schema, key, value)),
      queries: addresses.map((texts) => address.encodeAddress(schema, texts)),
      decoded: decode.map((query) => address.decodeAddress(schema, query)),
    }}));
"""


def js_codec(values: list[dict], addresses: list[dict], decode: list[str]) -> dict:
    return run_js(JS_CODEC, {"schema": SCHEMA, "values": values, "addresses": addresses, "decode": decode})


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
    keys = ["prompt", "mode", "system", "top_n", "no_cache", *SCHEMA["properties"]]
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
