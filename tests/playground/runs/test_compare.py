"""The comparison's divergence (playground/runs/compare.py): exactly 0 for the same settings in the
same context, a range for different settings, nothing once the runs' texts have parted, pair by
pair; and the page's TV cells, caption and greyed rows (issue 30, item 6)."""

from __future__ import annotations

import copy
import json

import pytest
from django.utils.html import escape

from playground.runs.compare import compare, shaping_differences
from playground.runs.models import Run
from tests.playground.runs import helpers

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])

# The top-3 lists hold 0.8, 0.95 and 0.85 of the final mass: the old upper bound at position 1 of
# two identical runs was 1 − 0.8 = 0.2 ("0.000–0.200"), though the distributions were the same.
PARTIAL = [
    (7042, " Paris", [(7042, " Paris", 0.5, 0.5), (253, " a", 0.2, 0.2), (9, " the", 0.1, 0.1)]),
    (30, ".", [(30, ".", 0.6, 0.6), (28, ",", 0.3, 0.3), (11, " and", 0.05, 0.05)]),
    (314, " It", [(314, " It", 0.4, 0.4), (378, " The", 0.35, 0.35), (11, " and", 0.1, 0.1)]),
]


def saved(tokens=PARTIAL, **kw) -> Run:
    done = helpers.record(helpers.events(tokens=tokens, **kw))
    return Run.objects.get(pk=done["run_id"])


def parted_at(tokens, index: int, token_id: int, text: str):
    """The same tokens, but another token chosen at ``index`` (from the same alternatives)."""
    changed = copy.deepcopy(tokens)
    _, _, alternatives = changed[index]
    changed[index] = (token_id, text, alternatives)
    return changed


def tv(comparison, position: int, run: int = 1):
    return comparison["positions"][position]["divergence"][run]


def test_the_same_settings_in_the_same_context_are_exactly_0_whatever_the_lists_leave_out(db_alias):
    a, b = saved(), saved()
    comparison = compare([a, b])
    for position in range(3):
        assert tv(comparison, position) == {
            "context": "same",
            "same_settings": True,
            "lower": 0.0,
            "upper": 0.0,
            "shared_tokens": 3,
        }


def test_another_seed_does_not_change_the_distribution_but_xtc_draws_with_it(db_alias):
    assert shaping_differences(saved(), saved(seed=7)) == []
    assert tv(compare([saved(), saved(seed=7)]), 0)["same_settings"] is True
    a, b = saved(xtc_probability=0.5), saved(xtc_probability=0.5, seed=7)
    assert shaping_differences(a, b) == ["seed"]
    assert tv(compare([a, b]), 0)["same_settings"] is False


def test_lengths_and_stop_strings_do_not_shape_a_step_but_sampling_settings_do(db_alias):
    base = saved()
    assert shaping_differences(base, saved(max_tokens=9, stop=["\n"])) == []
    assert shaping_differences(base, saved(temperature=1.2, min_tokens=2)) == ["params.min_tokens", "params.temperature"]


def test_different_settings_give_a_range_whose_low_end_counts_the_mass_left_out(db_alias):
    hotter = [
        (7042, " Paris", [(7042, " Paris", 0.5, 0.4), (253, " a", 0.2, 0.2), (9, " the", 0.1, 0.1)]),
        *PARTIAL[1:],
    ]
    comparison = compare([saved(), saved(tokens=hotter, temperature=1.2)])
    # stored: |0.5 − 0.4| = 0.1; left out: 0.2 and 0.3 → at least ½(0.1 + 0.1), at most ½(0.1 + 0.5)
    assert tv(comparison, 0) == pytest.approx(
        {"context": "same", "same_settings": False, "lower": 0.1, "upper": 0.3, "shared_tokens": 3}
    )


def test_after_the_first_divergence_no_distance_is_given(db_alias):
    a = saved()
    b = saved(tokens=parted_at(PARTIAL, 1, 28, ","))
    comparison = compare([a, b])
    assert comparison["first_divergence"] == 1
    assert tv(comparison, 0)["same_settings"] is True
    assert tv(comparison, 1)["context"] == "same"  # the parting step itself: same tokens before it
    assert tv(comparison, 2) == {"context": "different"}
    assert [p["same_context"] for p in comparison["positions"]] == [True, True, False]


def test_each_run_is_compared_with_run_1_up_to_their_own_divergence(db_alias):
    a = saved()
    early = saved(tokens=parted_at(PARTIAL, 0, 253, " a"))
    late = saved(tokens=parted_at(PARTIAL, 2, 378, " The"))
    comparison = compare([a, early, late])
    assert comparison["first_divergence"] == 0
    assert tv(comparison, 1, run=1) == {"context": "different"}
    assert tv(comparison, 1, run=2)["context"] == "same"  # run 3 still had run 1's tokens
    assert tv(comparison, 2, run=2)["context"] == "same"


def test_runs_of_different_prompts_share_no_context(db_alias):
    a = saved()
    done = helpers.record(helpers.events(tokens=PARTIAL), prompt="The")
    b = Run.objects.get(pk=done["run_id"])
    b.prompt_tokens = [[0, "<|endoftext|>"], [42, "A"]]
    b.save()
    comparison = compare([a, b])
    assert comparison["same_prompt"] is False
    assert all(tv(comparison, i) == {"context": "different"} for i in range(3))
    assert not any(p["same_context"] for p in comparison["positions"])


def test_the_page_shows_0_a_range_and_no_number_past_the_line_and_says_why(client, db_alias):
    a = saved()
    b = saved(tokens=parted_at(PARTIAL, 1, 28, ","))
    html = client.get(f"/compare/{a.id},{b.id}").content.decode()
    assert html.count('data-tv="zero">0</td>') == 2  # positions 1 and 2 (the parting step)
    assert html.count('data-tv="other"') == 1
    assert "0.000–0.200" not in html
    assert 'data-testid="context-break"' in html and "From position 3 on, the runs go on from different text" in html
    caption = html[html.index('data-testid="aligned-caption"') :]
    caption = caption[: caption.index("</p>")]
    assert "with the same settings it is exactly 0" in caption
    assert "top 3 alternatives" in caption and "show no TV" in caption

    hotter = saved(temperature=1.2)
    html = client.get(f"/compare/{a.id},{hotter.id}").content.decode()
    assert 'data-tv="range"' in html and 'data-testid="context-break"' not in html


# Grammar × compare: runs made by the worker's own generation path on the tiny model.

GRAMMAR = {
    "type": "json_schema",
    "schema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}},
}


def test_a_grammar_is_a_setting_that_shapes_the_distribution(client, tiny_runtime, db_alias):
    """The same grammar in the same context gives the same distribution (TV exactly 0); with and
    without it the distributions differ, so the range is given, and the settings table shows the
    grammar as the JSON it was sent as (not Python's repr of it)."""
    from tests.playground.runs.test_round_trip import generate, run_id_of

    params = {"temperature": 0.9, "max_tokens": 4, "seed": 3}
    constrained = [run_id_of(generate(tiny_runtime, f"g{i}", params=params | {"grammar": GRAMMAR})) for i in range(2)]
    free = run_id_of(generate(tiny_runtime, "free", params=params))

    same = client.get(f"/compare/{constrained[0]},{constrained[1]}.json").json()["comparison"]
    assert same["differing"] == [] and same["first_divergence"] is None
    assert all(p["divergence"][1]["same_settings"] and p["divergence"][1]["upper"] == 0 for p in same["positions"])

    apart = client.get(f"/compare/{constrained[0]},{free}.json").json()["comparison"]
    assert [row["name"] for row in apart["differing"]] == ["params.grammar"]
    assert apart["differing"][0]["values"] == [GRAMMAR, None]
    first = apart["positions"][0]["divergence"][1]  # the prompt alone before it: the same context
    assert first["context"] == "same" and first["same_settings"] is False
    html = client.get(f"/compare/{constrained[0]},{free}").content.decode()
    row = html[html.index('data-setting="params.grammar"') :]
    row = row[: row.index("</tr>")]
    assert escape(json.dumps(GRAMMAR)) in row and "&#x27;type&#x27;" not in row and "<td>null</td>" in row


def test_the_seed_note_counts_positions_from_1_as_the_page_does(client, db_alias):
    a = saved()
    b = saved(tokens=parted_at(PARTIAL, 1, 28, ","), temperature=1.2)
    comparison = compare([a, b])
    assert comparison["first_divergence"] == 1  # 0-based in the JSON
    assert "at position 2," in comparison["note"]  # the page's "First divergence: position 2"
    assert "position 2</a>" in client.get(f"/compare/{a.id},{b.id}").content.decode()
