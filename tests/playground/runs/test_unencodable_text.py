"""Text that is not text — lone surrogates (the JSON escape "\\ud800" on its own) and U+0000 — is
answered with a 400 naming the field, is never saved whoever tries, and runs saved with it before
are shown anyway and repaired by ``manage.py repair_run_text``."""

from __future__ import annotations

import copy
import dataclasses
import io
import json

import pytest
from django.core.management import call_command
from django.db import DataError, connections, transaction

from playground.runs.errors import UnencodableText
from playground.runs.models import Run
from playground.runs.recording import RunRecorder
from playground.runs.token_rows import from_stored, load_rows, to_stored
from tests.playground.runs import helpers

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])

SURROGATE = "\ud800"
BAD_TEXT = [("lone surrogate", f"a{SURROGATE}b", "lone surrogate U+D800"), ("NUL", "a\x00b", "U+0000")]


def saved() -> tuple[Run, dict]:
    done = helpers.record(helpers.events())
    return Run.objects.get(pk=done["run_id"]), done


def post(client, url: str, body: object):
    # json.dumps writes a lone surrogate as the escape "\ud800", as a client's JSON would carry it
    return client.post(url, data=json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("name, text, problem", BAD_TEXT, ids=[b[0] for b in BAD_TEXT])
def test_delete_token_and_search_text_are_refused_by_field(client, db_alias, name, text, problem):
    run, done = saved()
    answer = post(client, f"/api/runs/{run.id}/delete", {"delete_token": text})
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["param"] == "delete_token" and error["code"] == "invalid_value" and problem in error["message"]
    assert Run.objects.filter(pk=run.id).exists()

    answer = post(client, "/api/runs/summaries", {"ids": [run.id], "q": text})
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["param"] == "q" and problem in answer.json()["error"]["message"]

    # A bad id is only an id that is not found.
    answer = post(client, "/api/runs/summaries", {"ids": [run.id, text]})
    assert answer.status_code == 200 and answer.json()["missing"] == [text]


@pytest.mark.parametrize(
    "where, param",
    [
        (("run", "request", "prompt"), "run.request.prompt"),
        (("run", "request", "params", "stop"), "run.request.params.stop[0]"),
        (("run", "tokens", 0, "text"), "run.tokens[0].text"),
        (("run", "tokens", 1, "alternatives", 2, "token"), "run.tokens[1].alternatives[2].token"),
        (("run", "result", "text"), "run.result.text"),
        (("run", "result", "error"), "run.result.error"),
        (("run", "model", "name"), "run.model.name"),
        (("run", "prompt_tokens", 1, "text"), "run.prompt_tokens[1].text"),
    ],
)
@pytest.mark.parametrize("name, text, problem", BAD_TEXT, ids=[b[0] for b in BAD_TEXT])
def test_an_import_with_bad_text_names_the_field_and_saves_nothing(client, db_alias, where, param, name, text, problem):
    run, _ = saved()
    export = client.get(f"/r/{run.id}.json").json()
    target = export
    for key in where[:-1]:
        target = target[key]
    value = {"code": text, "message": "m", "param": None} if where[-1] == "error" else [text] if where[-1] == "stop" else text
    target[where[-1]] = value
    count = Run.objects.count()
    answer = post(client, "/api/runs/import", export)
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    expected_param = "run.result.error.code" if where[-1] == "error" else param
    assert error["code"] == "invalid_export" and error["param"] == expected_param, error
    assert problem in error["message"]
    assert Run.objects.count() == count


def test_a_bad_key_is_named_printably(client, db_alias):
    run, _ = saved()
    export = client.get(f"/r/{run.id}.json").json()
    export["run"]["request"]["params"]["logit_bias"] = {SURROGATE: 1.0}
    answer = post(client, "/api/runs/import", export)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "run.request.params.logit_bias.\\ud800" and "has a key that" in error["message"]


@pytest.mark.parametrize("name, text, problem", BAD_TEXT, ids=[b[0] for b in BAD_TEXT])
def test_saving_refuses_bad_text_whoever_saves(db_alias, name, text, problem):
    """The recorder (a stop string or a generated token that is not text), and any other caller."""
    evts = helpers.events(stop=[text])
    done = helpers.record(evts)
    assert done["run_id"] is None and "UnencodableText" in done["save_error"]
    assert done["reason"] == "max_tokens"  # the stream still ended normally

    evts = helpers.events()
    evts[2]["text"] = text
    assert helpers.record(evts)["run_id"] is None

    run, _ = saved()
    run.pk = None
    run.id = "x" * 22
    run.prompt = text
    with pytest.raises(UnencodableText) as raised:
        run.save(force_insert=True)
    assert raised.value.param == "prompt" and problem in raised.value.message
    original = Run.objects.get()
    before = copy.deepcopy(original.tokens)
    row = from_stored(original.tokens[1])
    bad = dataclasses.replace(row.alternatives[0], token=text)
    original.tokens[1] = to_stored(dataclasses.replace(row, alternatives=(bad, *row.alternatives[1:])))
    with pytest.raises(UnencodableText) as raised:
        original.save()
    assert raised.value.param == "tokens[1].alternatives[0].token"  # named by field, not by column
    assert Run.objects.count() == 1 and Run.objects.get().tokens == before


@pytest.mark.parametrize("name, text, problem", BAD_TEXT, ids=[b[0] for b in BAD_TEXT])
def test_bulk_writes_refuse_bad_text_too(db_alias, name, text, problem):
    run, _ = saved()
    copy_of_run = Run.objects.get(pk=run.id)
    copy_of_run.pk = copy_of_run.id = "y" * 22
    copy_of_run.system = text
    with pytest.raises(UnencodableText) as raised:
        Run.objects.bulk_create([copy_of_run])
    assert raised.value.param == "system" and problem in raised.value.message
    with pytest.raises(UnencodableText) as raised:
        Run.objects.filter(pk=run.id).update(params=run.params | {"stop": [text]})
    assert raised.value.param == "params.stop[0]"
    run.text = text
    with pytest.raises(UnencodableText):
        Run.objects.bulk_update([run], ["text"])
    assert Run.objects.count() == 1 and Run.objects.get().unencodable_text() is None
    assert Run.objects.filter(pk=run.id).update(text="fine") == 1  # clean values pass


def _store_as_an_old_server_did(db_alias: str, run_id: str) -> None:
    """What a server without the check left in SQLite: the escape inside the JSON columns (a stop
    string, a token's text) and a NUL in a text column."""
    run = Run.objects.get(pk=run_id)
    params = json.dumps(run.params | {"stop": [f"x{SURROGATE}", "\n"]})
    tokens = copy.deepcopy(run.tokens)
    tokens[0] = to_stored(dataclasses.replace(from_stored(tokens[0]), text=f"{SURROGATE} Paris"))
    cast = "::jsonb" if connections[db_alias].vendor == "postgresql" else ""
    with connections[db_alias].cursor() as cursor:
        cursor.execute(
            f"UPDATE playground_run SET params = %s{cast}, tokens = %s{cast}, prompt = %s WHERE id = %s",
            [params, json.dumps(tokens), "The\x00", run_id],
        )


def test_runs_saved_with_bad_text_are_shown_and_repaired(client, db_alias):
    run, _ = saved()
    good, _ = saved()
    if db_alias == "postgres":
        # PostgreSQL never stored such text: it refused those runs when they were saved.
        with pytest.raises(DataError), transaction.atomic(using=db_alias):
            _store_as_an_old_server_did(db_alias, run.id)
        out = io.StringIO()
        call_command("repair_run_text", database=db_alias, stdout=out)
        assert out.getvalue().strip() == "repaired 0 of 2 runs"
        return
    _store_as_an_old_server_did(db_alias, run.id)
    stored = Run.objects.get(pk=run.id)
    assert stored.params["stop"] == [f"x{SURROGATE}", "\n"] and stored.prompt == "The\x00"

    # Shown anyway (repaired in memory), never a 500.
    for path in (f"/r/{run.id}", f"/r/{run.id}.json", f"/compare/{run.id},{good.id}", f"/compare/{good.id},{run.id}.json"):
        assert client.get(path).status_code == 200, path
    exported = client.get(f"/r/{run.id}.json").json()["run"]
    assert exported["request"]["params"]["stop"] == ["x\ufffd", "\n"] and exported["tokens"][0]["text"] == "\ufffd Paris"

    out = io.StringIO()
    call_command("repair_run_text", "--dry-run", database=db_alias, verbosity=2, stdout=out)
    report = out.getvalue()
    assert f"run {run.id}: " in report and "prompt: contains U+0000" in report and "params.stop[0]" in report
    assert report.strip().endswith("would repair 1 of 2 runs (dry run: nothing changed)")
    assert Run.objects.get(pk=run.id).params["stop"] == [f"x{SURROGATE}", "\n"]  # nothing changed

    out = io.StringIO()
    call_command("repair_run_text", database=db_alias, stdout=out)
    assert out.getvalue().strip() == "repaired 1 of 2 runs"
    repaired = Run.objects.get(pk=run.id)
    assert repaired.params["stop"] == ["x\ufffd", "\n"]
    assert repaired.prompt == "The\ufffd" and load_rows(repaired.tokens)[0].text == "\ufffd Paris"
    assert repaired.tokens[1:] == Run.objects.get(pk=good.id).tokens[1:]  # the rest untouched
    assert repaired.unencodable_text() is None

    out = io.StringIO()
    call_command("repair_run_text", database=db_alias, verbosity=0, stdout=out)
    assert out.getvalue() == ""
    call_command("repair_run_text", database=db_alias, stdout=out)
    assert out.getvalue().strip() == "repaired 0 of 2 runs"  # nothing left to do


def test_a_run_recorded_live_with_bad_text_is_not_saved_and_says_so(db_alias):
    recorder = RunRecorder("r", {"prompt": f"The {SURROGATE}", "mode": "completion", "system": None})
    for event in helpers.events()[:-1]:
        recorder.observe(event)
    done = recorder.finish(helpers.events()[-1])
    assert done["run_id"] is None and done["save_error"] and Run.objects.count() == 0
