"""Saved tokens are ``token`` events (``TokenEvent``, their one definition), stored compactly as
before, and runs stored in the old form — rows without the trailing object, saved before tokens had ``removed_by`` and
``forced`` — still load, show, export and compare."""

from __future__ import annotations

import json

import pytest

from playground.runs import schema
from playground.runs.fields import TOKENS
from playground.runs.models import Run
from playground.runs.token_rows import exported, from_stored, sample_text, stored_row_from_event
from playground.wire.token_event import Alternative, EventError, Stage, TokenEvent
from tests.playground.runs import helpers

EVENT = helpers.token(0, 7042, " Paris", helpers.PARIS[0][2])

# An exported token's keys today, in order, as written by hand (exports/ pins the first fields' order
# byte for byte; ``origin``, ``draw_interval`` and ``watched`` came later). A field the event gains
# from now on follows these, in the event's own order.
EXPORTED_KEYS = [
    "sample", "index", "id", "token", "text", "raw_prob", "prob", "removed_by", "alternatives", "forced", "origin",
    "draw", "draw_interval", "entropy", "stages", "elapsed_ms", "watched",
]  # fmt: skip

# A row as the server stored it before ``forced`` existed: thirteen columns, no trailing object.
OLD_ROW = [
    0,
    0,
    7042,
    " Paris",
    " Paris",
    0.5,
    0.7,
    0.25,
    1.5,
    0.9,
    20.5,
    [[7042, " Paris", 0.5, 0.7, None], [253, " a", 0.2, 0.3, None], [9, " the", 0.1, 0.0, "top_p"]],
    [["temperature", 10], ["top_p", 9], ["dist", 8]],
]


def saved(event: dict) -> TokenEvent:
    """The event as a saved run holds it (no ``type``, no ``request_id``)."""
    return TokenEvent.from_saved({k: v for k, v in event.items() if k not in ("type", "request_id")})


def test_a_token_event_becomes_named_fields_and_the_same_compact_row():
    row = saved(EVENT)
    assert (row.sample, row.index, row.id, row.token, row.prob, row.draw) == (0, 0, 7042, " Paris", 0.7, 0.25)
    assert row.alternatives[2] == Alternative(id=9, token=" the", raw_prob=0.1, prob=0.0, removed_by="top_p")
    assert row.stages[0] == Stage("temperature", 10)
    assert (row.entropy.before, row.entropy.after, row.removed_by, row.forced) == (1.5, 0.9, None, False)
    # Stored exactly as before: defaults (removed_by null, forced false) take no room.
    assert stored_row_from_event(EVENT) == OLD_ROW
    assert TOKENS.columns([EVENT]) == {"tokens": [OLD_ROW]}  # the field table's token conversion
    assert from_stored(OLD_ROW) == row
    assert exported(row) == {k: v for k, v in EVENT.items() if k not in ("type", "request_id")}
    keys = list(exported(row))  # in the order exports have always written them, what is newer after
    assert keys[: len(EXPORTED_KEYS)] == EXPORTED_KEYS
    assert keys[len(EXPORTED_KEYS) :] == [name for name in TokenEvent.field_names() if name in keys[len(EXPORTED_KEYS) :]]


def test_fields_without_a_column_live_in_the_trailing_object():
    event = EVENT | {"forced": True, "removed_by": "top_k", "drafted": False}
    stored = stored_row_from_event(event)
    # (forced, yet what this run's own pick took: the origin says more than ``forced`` implies, so it is kept)
    # a speculative run's ``drafted`` false is kept: its export says it of every token, as it always has
    assert stored[13] == {"removed_by": "top_k", "forced": True, "origin": "sampled", "drafted": False}
    row = from_stored(json.loads(json.dumps(stored)))
    assert row.forced and row.removed_by == "top_k" and row.drafted is False
    assert exported(row) == {k: v for k, v in event.items() if k not in ("type", "request_id")}
    drafted = stored_row_from_event(EVENT | {"drafted": True, "origin": "draft"})
    assert drafted[13] == {"drafted": True} and exported(from_stored(drafted))["drafted"] is True
    # A key that names no field of the event is refused, not stored (nor lost without a word).
    with pytest.raises(EventError) as error:
        stored_row_from_event(EVENT | {"later_field": [1, 2]})
    assert error.value.path == "later_field"
    # The row the recorder writes today (the defaults spelled out) loads the same way.
    today = OLD_ROW + [{"removed_by": None, "forced": False}]
    assert from_stored(today) == from_stored(OLD_ROW)


def test_the_draw_interval_is_kept_in_the_trailing_object_and_old_rows_have_none():
    event = EVENT | {"draw_interval": [0.0, 0.7]}
    stored = stored_row_from_event(event)
    assert stored == OLD_ROW + [{"draw_interval": [0.0, 0.7]}]
    row = from_stored(json.loads(json.dumps(stored)))
    assert row.draw_interval == (0.0, 0.7)
    assert exported(row) == {k: v for k, v in event.items() if k not in ("type", "request_id")}
    assert from_stored(OLD_ROW).draw_interval is None
    assert exported(from_stored(OLD_ROW))["draw_interval"] is None


def test_an_exported_token_without_a_draw_interval_imports_and_a_bad_one_is_named():
    token = exported(saved(EVENT))
    del token["draw_interval"]  # as files written before it
    schema._token(token, "run.tokens[0]", 5, 1)  # passes the checks
    assert TokenEvent.from_saved(token).draw_interval is None
    for bad, where in (([0.8, 0.7], ""), ([0.1, 1.5], "[1]"), ([0.1], "")):
        with pytest.raises(schema.SchemaError) as error:
            schema._token(token | {"draw_interval": bad}, "run.tokens[0]", 5, 1)
        assert error.value.param == f"run.tokens[0].draw_interval{where}"


LYON = {"id": 31, "raw_prob": 0.01, "prob": 0.0, "raw_rank": 7, "rank": None, "removed_by": "top_p", "token": " Lyon"}


def test_watched_tokens_are_kept_in_the_trailing_object_and_old_rows_have_none():
    event = EVENT | {"watched": [LYON]}
    stored = stored_row_from_event(event)
    assert stored == OLD_ROW + [{"watched": [LYON]}]
    row = from_stored(json.loads(json.dumps(stored)))
    assert exported(row)["watched"] == [LYON]
    assert exported(row) == {k: v for k, v in event.items() if k not in ("type", "request_id")}
    assert exported(from_stored(OLD_ROW))["watched"] == []


def test_an_exported_token_without_watched_imports_and_a_bad_entry_is_named():
    token = exported(saved(EVENT))
    del token["watched"]  # as files written before it
    schema._token(token, "run.tokens[0]", 5, 1)
    schema._token(token | {"watched": [LYON]}, "run.tokens[0]", 5, 1)
    for bad, where in (
        ([LYON | {"rank": "1"}], "[0].rank"),
        ([LYON | {"prob": 1.5}], "[0].prob"),
        ([{k: v for k, v in LYON.items() if k != "raw_rank"}], "[0].raw_rank"),
        ([LYON] * 9, ""),
    ):
        with pytest.raises(schema.SchemaError) as error:
            schema._token(token | {"watched": bad}, "run.tokens[0]", 5, 1)
        assert error.value.param == f"run.tokens[0].watched{where}"


def test_sample_text_joins_one_samples_tokens():
    rows = [OLD_ROW, [1] + OLD_ROW[1:4] + [" Lyon"] + OLD_ROW[5:], [0, 1] + OLD_ROW[2:4] + ["."] + OLD_ROW[5:]]
    assert sample_text(rows) == " Paris." and sample_text(rows, 1) == " Lyon"


@pytest.mark.django_db(databases=["default", "postgres"])
def test_a_run_stored_in_the_old_form_loads_shows_exports_and_compares(client, db_alias):
    live = Run.objects.get(pk=helpers.record(helpers.events())["run_id"])
    old = Run.objects.get(pk=live.pk)
    old.pk = old.id = "O" * 22
    second = [0, 1, 30, ".", ".", 0.6, 0.8, None, 1.0, 0.5, None, [[30, ".", 0.6, 0.8, None]], []]
    old.tokens = [OLD_ROW, second]  # as a server before ``forced`` saved them
    old.save(force_insert=True)

    tokens = client.get(f"/r/{old.id}.json").json()["run"]["tokens"]
    assert tokens[0] == exported(from_stored(OLD_ROW))
    assert tokens[0]["forced"] is False and tokens[0]["removed_by"] is None
    assert tokens[1]["draw"] is None and tokens[1]["stages"] == []
    page = client.get(f"/r/{old.id}")
    assert page.status_code == 200
    comparison = client.get(f"/compare/{live.id},{old.id}.json").json()["comparison"]
    assert [p["same"] for p in comparison["positions"]] == [True, True, False]
    assert comparison["first_divergence"] == 2
    assert Run.objects.get(pk=old.id).tokens == [OLD_ROW, second]  # reading never rewrites storage
