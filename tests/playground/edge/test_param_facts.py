"""The parameter facts: the JSON Schema built from inference/, served, rendered into the pages, and
read by the page's scripts (run in Node) with the same answers as the Python it comes from."""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from inference.decoding.loop_params import LoopParams
from inference.errors import ParamError
from inference.sampling.params import DEFAULT_ORDER, MAX_SEED, SamplingParams
from playground.edge.param_facts import STAGE_SWITCHES, default_params, live_fields, params_schema, params_schema_json
from tests.js import module_url, run_js

SCHEMA = params_schema()
PROPERTIES = SCHEMA["properties"]


def server_accepts(key: str, value: Any) -> bool:
    """Whether the server's own classes take ``{key: value}`` as params."""
    cls = SamplingParams if key in SamplingParams.field_names() else LoopParams
    try:
        cls.from_dict({key: value})
    except (ParamError, TypeError, ValueError):
        return False
    return True


def test_the_schema_is_a_draft_2020_12_schema_of_every_field_in_order():
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    fields = [*SamplingParams().to_dict(), *LoopParams().to_dict()]
    assert list(PROPERTIES) == fields
    assert SCHEMA["additionalProperties"] is False
    assert SCHEMA["x-stage-order"] == list(DEFAULT_ORDER)
    assert {PROPERTIES[k]["x-part"] for k in SamplingParams.field_names()} == {"sampling"}
    assert {PROPERTIES[k]["x-part"] for k in LoopParams.field_names()} == {"loop"}


def test_defaults_are_the_servers_and_valid():
    defaults = default_params()
    assert defaults == {**SamplingParams().to_dict(), **LoopParams().to_dict()}
    Draft202012Validator(SCHEMA).validate(defaults)
    assert PROPERTIES["max_tokens"]["default"] == LoopParams().max_tokens
    assert all(PROPERTIES[k]["x-off"] for k in PROPERTIES)


def _probes(prop: dict[str, Any]) -> list[Any]:
    """Values at and just beyond a property's bounds, and of wrong types."""
    values: list[Any] = ["1", True, None, [], {}]
    kind = prop["x-kind"]
    low = prop.get("minimum", prop.get("exclusiveMinimum"))
    high = prop.get("maximum", prop.get("exclusiveMaximum"))
    if kind == "number":
        for bound in (low, high):
            if bound is not None:
                values += [bound, bound - 1e-9, bound + 1e-9, int(bound) if bound == int(bound) else bound]
        values += [(low or 0) + 0.25, 1e300]
    elif kind == "integer":
        for bound in (low, high):
            if bound is not None:
                values += [bound, bound - 1, bound + 1]
        values += [(low or 0) + 0.5, MAX_SEED + 1]
    elif kind == "choice":
        values += [*prop["enum"], 1, 3, -1]  # (2.0: JSON Schema counts it an integer; the server does not)
    elif kind == "boolean":
        values += [False, 0, 1, "true"]
    elif kind == "strings":
        values += [["a"], [""], ["x" * 64], ["x" * 65], ["a"] * 33, ["a"] * 8, ["a"] * 9, "one", [1]]
    elif kind == "token_bias":
        values += [{"5": 100}, {"5": 100.5}, {"5": -100}, {"x": 1}, {"-1": 1}, {"5": "1"}]
    elif kind == "stage_order":
        values += [list(DEFAULT_ORDER), ["top_k", "top_k"], ["nope"], ["top_k"], "top_k"]
    return values


@pytest.mark.parametrize("key", list(PROPERTIES))
def test_the_schema_accepts_exactly_what_the_server_accepts(key):
    """Every bound, just past it, and wrong types: the JSON Schema's answer is the server's."""
    validator = Draft202012Validator(SCHEMA)
    for value in _probes(PROPERTIES[key]):
        if key == "min_tokens" and isinstance(value, int) and not isinstance(value, bool) and value > 256:
            continue  # min_tokens <= max_tokens is a rule between two fields, stated in the description
        by_schema = validator.is_valid({key: value})
        assert by_schema == server_accepts(key, value), f"{key}={value!r}: schema says {by_schema}"


def test_every_stage_has_its_switch():
    assert list(STAGE_SWITCHES) == list(DEFAULT_ORDER)
    assert list(SCHEMA["x-stages"]) == list(DEFAULT_ORDER)
    for clauses in STAGE_SWITCHES.values():
        for clause in clauses:
            assert clause.get("param") in PROPERTIES or clause.get("stage") in DEFAULT_ORDER


# The stage on/off rule, evaluated by the page's own function in Node against enabled_stages().

NAMED_CASES: list[tuple[str, dict[str, Any]]] = [
    ("nothing set: no stage", {}),
    ("T = 1 is not a stage", {"temperature": 1.0}),
    ("T = 1 with top-p", {"temperature": 1, "top_p": 0.9}),
    ("T = 0.7", {"temperature": 0.7}),
    ("T = 0 drops every later stage", {"temperature": 0, "top_k": 5, "top_p": 0.9, "min_p": 0.1, "mirostat": 2}),
    (
        "T = 0 keeps the stages before it",
        {"temperature": 0, "repetition_penalty": 1.2, "logit_bias": {"3": 1}, "top_n_sigma": 1.0, "top_p": 0.5},
    ),
    (
        "T = 0 with temperature last keeps everything",
        {"temperature": 0, "top_k": 5, "sampler_order": [*[s for s in DEFAULT_ORDER if s != "temperature"], "temperature"]},
    ),
    ("dynamic temperature replaces temperature", {"temperature": 0.8, "dynatemp_range": 0.5}),
    ("dynamic temperature at T = 1", {"temperature": 1, "dynatemp_range": 0.5}),
    ("no dynamic temperature when greedy", {"temperature": 0, "dynatemp_range": 0.5, "top_k": 3}),
    ("DRY needs a window", {"dry_multiplier": 0.8, "dry_penalty_last_n": 0}),
    ("DRY on", {"dry_multiplier": 0.8}),
    ("top-n-sigma null is off", {"top_n_sigma": None}),
    (
        "everything",
        {
            "logit_bias": {"1": -5},
            "repetition_penalty": 1.1,
            "frequency_penalty": 0.2,
            "presence_penalty": -0.2,
            "dry_multiplier": 1,
            "no_repeat_ngram_size": 3,
            "top_n_sigma": 2,
            "temperature": 1.3,
            "top_k": 40,
            "top_p": 0.95,
            "min_p": 0.05,
            "typical_p": 0.9,
            "epsilon_cutoff": 0.001,
            "eta_cutoff": 0.001,
            "xtc_probability": 0.5,
            "mirostat": 2,
            "seed": 1,
        },
    ),
]


def _random_case(rng: random.Random) -> dict[str, Any]:
    """Valid sampling params: each stage's switch at its off value, a bound, or inside its range."""
    params: dict[str, Any] = {}
    for key, prop in PROPERTIES.items():
        if prop["x-part"] != "sampling" or key in ("seed", "sampler_order", "dry_sequence_breakers"):
            continue
        if rng.random() < 0.5:
            continue
        kind = prop["x-kind"]
        if kind == "token_bias":
            params[key] = rng.choice([{}, {str(rng.randrange(100)): rng.uniform(-100, 100)}])
        elif kind == "choice":
            params[key] = rng.choice(prop["enum"])
        elif kind == "grammar":
            params[key] = rng.choice([None, {"type": "choice", "options": ["yes", "no"]}])
        else:
            low = prop.get("minimum", prop.get("exclusiveMinimum"))
            high = prop.get("maximum", prop.get("exclusiveMaximum", low + 4))
            candidates = [
                prop["default"],
                high if "maximum" in prop else None,
                low if "minimum" in prop else None,
                0,
                1,
                round(rng.uniform(low, high), 3),
            ]
            value = rng.choice([c for c in candidates if c is not None])
            if kind == "integer":
                value = int(value) if int(value) >= low and (int(value) <= high or "maximum" not in prop) else low
            params[key] = value
    params = {k: v for k, v in params.items() if server_accepts(k, v)}
    if "xtc_probability" in params and params["xtc_probability"] > 0:
        params["seed"] = 7
    order = list(DEFAULT_ORDER)
    if rng.random() < 0.5:
        rng.shuffle(order)
        params["sampler_order"] = order
    return params


def test_the_pages_stage_rule_agrees_with_enabled_stages():
    rng = random.Random(20261123)
    cases = [params for _, params in NAMED_CASES] + [_random_case(rng) for _ in range(400)]
    expected = [list(SamplingParams.from_dict(params).enabled_stages()) for params in cases]
    got = run_js(
        f"""
        import {{ enabledStages }} from "{module_url("playground/js/param-facts.js")}";
        const {{ schema, cases }} = INPUT;
        console.log(JSON.stringify(cases.map((p) => enabledStages(schema, p, p.sampler_order ?? schema["x-stage-order"]))));
    """,
        {"schema": SCHEMA, "cases": cases},
    )
    for params, want, have in zip(cases, expected, got):
        assert have == want, f"{params}: page {have}, server {want}"
    named = dict(zip((name for name, _ in NAMED_CASES), expected))
    assert "temperature" not in named["T = 1 is not a stage"] and named["T = 1 is not a stage"] == []
    assert named["T = 0 drops every later stage"] == ["temperature"]
    assert named["T = 0 keeps the stages before it"] == ["logit_bias", "repetition_penalty", "top_n_sigma", "temperature"]


def test_every_parameter_has_labels_and_every_label_a_parameter():
    labels = run_js(f"""
        import {{ LABELS, PRESET_KEYS, BUILTIN_PRESETS, WHAT_IF }} from "{module_url("playground/js/param-labels.js")}";
        console.log(JSON.stringify({{
          labels: LABELS.map((l) => l.key),
          named: [...PRESET_KEYS, ...BUILTIN_PRESETS.flatMap((p) => Object.keys(p.values)), ...WHAT_IF.map((w) => w.key)],
          choiceNames: LABELS.filter((l) => l.choiceNames).map((l) => [l.key, l.choiceNames.map(([v]) => v)]),
        }}));
    """)
    assert sorted(labels["labels"]) == sorted(PROPERTIES), (
        f"only in Python: {sorted(set(PROPERTIES) - set(labels['labels']))}; "
        f"only in the page's labels: {sorted(set(labels['labels']) - set(PROPERTIES))}"
    )
    assert len(labels["labels"]) == len(set(labels["labels"]))
    assert set(labels["named"]) <= set(PROPERTIES)
    for key, values in labels["choiceNames"]:
        assert values == PROPERTIES[key]["enum"]
    assert {field["key"] for field in live_fields()["column"]} | set(live_fields()["shared"]) <= set(PROPERTIES)


def test_every_stage_has_a_human_name_and_every_name_a_stage():
    """The page names each stage the server declares ("Nucleus (top-p) · top_p"), and no other."""
    shown = run_js(
        f"""
        import {{ STAGE_LABELS, stageLabel, stageText }} from "{module_url("playground/js/param-labels.js")}";
        console.log(JSON.stringify({{
          labels: Object.keys(STAGE_LABELS),
          texts: INPUT.map((name) => [stageLabel(name), stageText(name)]),
          unknown: [stageLabel("no_such_stage"), stageText("no_such_stage")],
        }}));
    """,
        SCHEMA["x-stage-order"],
    )
    assert sorted(shown["labels"]) == sorted(DEFAULT_ORDER), (
        f"stages without a label in param-labels.js: {sorted(set(DEFAULT_ORDER) - set(shown['labels']))}; "
        f"labels of no stage: {sorted(set(shown['labels']) - set(DEFAULT_ORDER))}"
    )
    for name, (label, text) in zip(DEFAULT_ORDER, shown["texts"]):
        assert label and label != name and text == f"{label} · {name}"
    assert dict(zip(DEFAULT_ORDER, shown["texts"]))["top_p"] == ["Nucleus (top-p)", "Nucleus (top-p) · top_p"]
    assert shown["unknown"] == ["no_such_stage", "no_such_stage"]


def test_every_range_reads_from_the_schema():
    texts = run_js(
        f"""
        import {{ rangeText }} from "{module_url("playground/js/param-facts.js")}";
        console.log(JSON.stringify(Object.fromEntries(Object.entries(INPUT.properties).map(([k, p]) => [k, rangeText(p)]))));
    """,
        SCHEMA,
    )
    assert texts["temperature"] == "0 – 2"
    assert texts["top_p"] == "above 0, at most 1"
    assert texts["epsilon_cutoff"] == "0 to below 1"
    assert texts["top_k"] == "integer ≥ 0"
    assert texts["repetition_penalty"] == "above 0"
    assert texts["frequency_penalty"] == "\u22122 – 2"
    assert texts["seed"] == "integer 0 – 2^63\u22121"
    assert texts["mirostat"] == "0 or 2"
    assert texts["stop"].startswith("up to 8,") and texts["dry_sequence_breakers"].startswith("up to 32,")
    for key, prop in PROPERTIES.items():
        if prop["x-kind"] not in ("token_bias", "stage_order", "grammar"):  # (their own editors)
            assert texts[key], key


# Served and rendered.


def test_the_schema_is_served_with_cache_headers(client):
    response = client.get("/api/params.schema.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/schema+json"
    assert "max-age=3600" in response["Cache-Control"] and "public" in response["Cache-Control"]
    assert json.loads(response.content) == SCHEMA
    etag = response["ETag"]
    assert etag == params_schema_json()[1]
    again = client.get("/api/params.schema.json", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert client.post("/api/params.schema.json").status_code == 405


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/", "/compare/live"])
def test_the_pages_carry_the_same_facts(client, url):
    html = client.get(url).content.decode()
    match = re.search(r'<script id="param-facts" type="application/json">(.*?)</script>', html, re.S)
    assert match, "no param-facts json_script"
    assert json.loads(match.group(1)) == SCHEMA


def test_unbounded_ranges_have_no_maximum():
    for key in ("top_k", "repetition_penalty", "max_tokens"):
        assert "maximum" not in PROPERTIES[key] and "exclusiveMaximum" not in PROPERTIES[key]
    assert PROPERTIES["seed"]["maximum"] == MAX_SEED
    assert not any(isinstance(v, float) and math.isinf(v) for prop in PROPERTIES.values() for v in itertools.chain(prop.values()))


@pytest.mark.django_db
def test_the_live_comparison_renders_its_fields_from_the_same_data(client):
    html = client.get("/compare/live").content.decode()
    match = re.search(r'<script id="live-fields" type="application/json">(.*?)</script>', html, re.S)
    assert match and json.loads(match.group(1)) == live_fields()
    for n in range(1, 5):
        for field in live_fields()["column"]:
            key = field["key"]
            assert f'id="c{n}-{key}" name="c{n}.{key}"' in html and f'inputmode="{field["inputmode"]}"' in html
    rendered = set(re.findall(r'id="c1-(\w+)" name="c1\.', html))
    assert rendered == {field["key"] for field in live_fields()["column"]} | {"other", "model"}  # the JSON box, the model picker
    for key in live_fields()["shared"]:
        assert f'id="live-{key}"' in html
