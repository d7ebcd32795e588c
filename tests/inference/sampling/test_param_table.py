"""docs/sampling.md's parameter table is what the fields' declarations make (``param_table``), and
what they make is what a reader needs: ranges, off values and defaults in the table's words."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from inference.sampling import SamplingParams
from inference.sampling.param_table import param_table, param_table_in
from inference.sampling.params import FIELDS
from inference.sampling.stages.fields import Integer, Number

DOC = Path(__file__).resolve().parents[3] / "docs" / "sampling.md"


def _rows(table: str) -> dict[str, str]:
    return {line.split(" | ")[0].removeprefix("| ").strip("`"): line for line in table.splitlines() if line.startswith("| `")}


def test_the_docs_parameter_table_is_the_declarations():
    assert param_table_in(DOC.read_text()) == param_table(), (
        "docs/sampling.md's parameter table differs from the declarations: run "
        "`python -m inference.sampling.stages --write docs/sampling.md`"
    )


def test_the_table_has_a_row_per_field_stages_first_in_the_default_order():
    names = list(_rows(param_table()))
    assert sorted(names) == sorted(SamplingParams.field_names())
    assert names == [*(name for name in FIELDS if name != "seed"), "sampler_order", "seed"]


@pytest.mark.parametrize(
    "row",
    [
        # Written by hand: each kind's range, an open end, an off value, a default that is not "off",
        # a nullable field, a definition with a pipe in it.
        "| `top_p` | (0, 1] | 1 | nucleus: sort by probability descending (ties: lower id first), keep the smallest prefix whose cumulative probability is >= top_p. |",
        "| `epsilon_cutoff` | [0, 1) | 0 | Hugging Face: remove tokens with p < ε. |",
        "| `repetition_penalty` | > 0 | 1 | CTRL (Keskar et al.): for each *distinct* token of the windowed history, a logit > 0 is divided by the penalty, a logit <= 0 multiplied by it. |",
        "| `penalty_window` | integer >= 0 | 0 = the whole history | the three penalties (`repetition_penalty`, `frequency_penalty`, `presence_penalty`) only count the last N history tokens. |",
        "| `dry_base` | >= 1 | 1.75 | DRY's exponential base. |",
        "| `dry_penalty_last_n` | integer >= -1 | -1 = the whole history, 0 = off | DRY's window. |",
        '| `dry_sequence_breakers` | up to 32 strings of 1–64 chars | `["\\n", ":", "\\"", "*"]` | tokens whose text contains one of these stop a repeat. |',
        "| `top_n_sigma` | >= 0 (null accepted as 0) | 0 | Tang et al.: keep logits >= max − n·σ, σ the population standard deviation of the candidates' logits. |",
        "| `typical_p` | (0, 1] | 1 | Meister et al.: sort by \\|−ln p − H\\| ascending (H the entropy in nats; ties: lower id first), keep the smallest prefix with cumulative probability >= typical_p. |",
        "| `logit_bias` | `{token id: bias}`, id >= 0, bias in [-100, 100] | `{}` | `logit[id] += bias`. Ids must be < V: checked when applied, or up front with `params.validate_for_vocab(V)`. |",
        "| `mirostat` | 0 or 2 | 0 = off, 2 = mirostat v2 | 2 turns on mirostat v2 (mirostat 1 is not offered). |",
        '| `grammar` | `{"type": "json_schema", …}` or `{"type": "regex", …}` or `{"type": "choice", …}` | null | constrained decoding: removes every token the JSON Schema (`schema`), regular expression (`pattern`) or list of strings (`options`) forbids after the text so far; the end of sequence only where the text is complete. See "Constrained decoding" below. |',
        "| `sampler_order` | list of stage names, no repeats | the default order | the order of the stages (below). |",
        "| `seed` | integer in [0, 2^63-1] or null | null = drawn at random | the run's seed (below). |",
    ],
)
def test_a_row_says_the_declared_range_default_and_definition(row):
    name = row.split(" | ")[0].removeprefix("| ").strip("`")
    assert _rows(param_table())[name] == row


def _with(name: str, **changes) -> dict:
    return {n: dataclasses.replace(f, **changes) if n == name else f for n, f in FIELDS.items()}


def test_a_changed_declaration_changes_the_table():
    """The doc check is not vacuous: another bound, open end, default, off word or definition gives another row."""
    assert isinstance(FIELDS["top_p"], Number) and isinstance(FIELDS["top_k"], Integer)
    doc = param_table_in(DOC.read_text())
    for changed in (
        _with("top_p", high=0.5),
        _with("top_p", low_open=False),
        _with("top_k", low=1),
        _with("penalty_window", off="0 = every token"),
        _with("dry_base", off="2 = off", default=2.0),
        _with("min_p", definition="something else"),
        dict(reversed(FIELDS.items())),
    ):
        assert param_table(changed) != doc


def test_a_field_without_a_definition_is_refused():
    with pytest.raises(ValueError, match="'top_k' has no definition"):
        param_table(_with("top_k", definition=""))
