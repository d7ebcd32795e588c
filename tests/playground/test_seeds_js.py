"""The page's seed codec (static/shared/js/seeds.js), run in Node: seeds above 2^53 (a JS
number's exact range) are read from the server's JSON as their own digits and sent back as the
same JSON integers, with no float in between."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.js import module_url, run_js

# Chromium reads a number's source text in a reviver by default; Node 20 needs V8's flag for it
# (newer Node has it on, and no longer lists the flag).
FLAG = "--harmony-json-parse-with-source"


def node_flags() -> tuple[str, ...]:
    options = subprocess.run(["node", "--v8-options"], capture_output=True, text=True, check=False).stdout
    return (FLAG,) if FLAG.removeprefix("--") in options else ()


SCRIPT = f"""
const {{ HAS_SOURCE_TEXT, parseJson, seedValue }} = await import("{module_url("shared/js/seeds.js")}");
const parsed = parseJson(INPUT.server);
const again = INPUT.seeds.map((text) => JSON.stringify({{ seed: seedValue(text) }}));
const typed = INPUT.typed.map((text) => JSON.stringify({{ seed: seedValue(text) }}));
console.log(JSON.stringify({{ HAS_SOURCE_TEXT, parsed, types: parsed.runs.map((r) => typeof r.seed), again, typed }}));
"""

SEEDS = [0, 7, 2**53, 2**53 + 1, 3547710859097758228, 2**62 - 1, 2**63 - 1]


@pytest.fixture(scope="module")
def codec():
    # The server's JSON, as /api/runs/summaries writes it: seeds at the top and inside params.
    server = json.dumps(
        {"runs": [{"id": "r", "seed": seed, "params": {"seed": seed, "temperature": 0.7}} for seed in SEEDS], "n": 2**53 + 1}
    )
    return run_js(
        SCRIPT,
        {"server": server, "seeds": [str(s) for s in SEEDS], "typed": ["007", " 42 ", "-1", "1.5", "abc", "1e3"]},
        node_flags(),
    )


def test_the_reviver_sees_the_numbers_source_text(codec):
    assert codec["HAS_SOURCE_TEXT"] is True  # as in Chromium: the exact path is the one tested


def test_seeds_are_read_as_their_own_digits_at_any_depth(codec):
    runs = codec["parsed"]["runs"]
    assert [r["seed"] for r in runs] == [str(s) for s in SEEDS]
    assert [r["params"]["seed"] for r in runs] == [str(s) for s in SEEDS]
    assert codec["types"] == ["string"] * len(SEEDS)
    assert runs[0]["params"]["temperature"] == 0.7
    assert codec["parsed"]["n"] == 2**53  # other keys stay plain numbers (and round, as JS does)


def test_seeds_go_back_as_the_same_json_integers(codec):
    assert [json.loads(text)["seed"] for text in codec["again"]] == SEEDS
    assert codec["again"][-1] == '{"seed":9223372036854775807}'


def test_typed_text_is_sent_as_the_server_must_judge_it(codec):
    assert [json.loads(text)["seed"] for text in codec["typed"]] == [7, 42, -1, 1.5, "abc", 1000.0]
    assert codec["typed"][0] == '{"seed":7}' and codec["typed"][5] == '{"seed":1e3}'
