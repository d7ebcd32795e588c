"""The form's layout of dials (static/playground/js/dial-layout.js, run in Node) over the page's
real labels (param-labels.js): the main dials first and open, every other dial in exactly one
closed group, and the groups a given setting opens."""

from __future__ import annotations

import pytest

from tests.js import module_url, run_js

LAYOUT = f"""
const {{ ESSENTIAL_KEYS, dialLayout, groupsToOpen }} = await import("{module_url("playground/js/dial-layout.js")}");
const {{ GROUPS, LABELS }} = await import("{module_url("playground/js/param-labels.js")}");
const params = LABELS.filter((label) => label.group);
const layout = dialLayout(GROUPS, params);
console.log(JSON.stringify({{
  essentials: ESSENTIAL_KEYS,
  formKeys: params.map((p) => p.key),
  groups: layout.map((g) => ({{ id: g.id, open: g.open, keys: g.params.map((p) => p.key) }})),
  opened: INPUT.map(([values, initial]) => [...groupsToOpen(layout, values, initial)].sort()),
}}));
"""

INITIAL = {"temperature": "0.7", "top_k": "0", "mirostat": "0", "stop": "", "repetition_penalty": "1", "n": "1"}
CASES = [
    ({}, []),
    ({"temperature": "1.5", "top_k": "40"}, []),  # main dials are open already
    ({"mirostat": "2"}, ["truncation"]),
    ({"mirostat": "0"}, []),  # the fresh value: nothing to show
    ({"stop": "\\n", "repetition_penalty": "1.2", "n": "3"}, ["length", "penalties", "search"]),
]


@pytest.fixture(scope="module")
def answer() -> dict:
    return run_js(LAYOUT, [[values, INITIAL] for values, _ in CASES])


def test_the_main_dials_come_first_and_open(answer):
    first, *rest = answer["groups"]
    assert first == {"id": "essentials", "open": True, "keys": answer["essentials"]}
    assert answer["essentials"] == ["temperature", "top_k", "top_p", "min_p", "max_tokens", "seed"]
    assert rest and not any(group["open"] for group in rest)
    assert all(group["keys"] for group in rest), "no empty group"


def test_every_dial_is_in_exactly_one_group(answer):
    placed = [key for group in answer["groups"] for key in group["keys"]]
    assert sorted(placed) == sorted(answer["formKeys"])
    assert len(placed) == len(set(placed))


def test_a_setting_on_a_hidden_dial_opens_its_group(answer):
    assert answer["opened"] == [opened for _, opened in CASES]
