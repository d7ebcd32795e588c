"""A saved run records the served model it ran on (issue 23): from its ``started`` event's
``model.id``, in its export, its summary in /history and its "open in the playground" address.
Runs saved before there were several models, and export files written then, read as the default
model (SmolLM2)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from playground.runs import schema
from playground.runs.models import Run
from playground.runs.views import playground_query
from tests.playground.runs.helpers import MODEL, events, record

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])

GEMMA = {**MODEL, "id": "gemma-3-270m", "name": "gemma-3-270m", "context_window": 32768}


def saved(model: dict) -> Run:
    evts = events()
    evts[0] = evts[0] | {"model": model}
    return Run.objects.get(pk=record(evts)["run_id"])


def test_a_run_records_the_model_its_started_event_names():
    run = saved(GEMMA)
    assert (run.model, run.model_name) == ("gemma-3-270m", "gemma-3-270m")
    assert schema.run_export(run)["run"]["model"]["id"] == "gemma-3-270m"
    query = parse_qs(urlsplit(playground_query(run)).query)
    assert query["model"] == ["gemma-3-270m"]  # "open in the playground" picks the model again


def test_a_run_without_a_model_id_reads_as_the_default_model():
    run = saved(MODEL)  # a started event as the server sent it before several models
    assert run.model == "smollm2-135m-instruct"
    assert schema.run_export(run)["run"]["model"]["id"] == "smollm2-135m-instruct"
    assert "model" not in parse_qs(urlsplit(playground_query(run)).query)  # the default: the address as before


def test_an_export_written_before_model_ids_imports_as_the_default_and_one_with_it_keeps_it():
    gemma = schema.run_export(saved(GEMMA))
    [copy] = schema.parse_export(json.loads(json.dumps(gemma)))
    assert copy.fields["model"] == "gemma-3-270m"
    older = json.loads(json.dumps(gemma))
    del older["run"]["model"]["id"]
    [copy] = schema.parse_export(older)
    assert copy.fields["model"] == "smollm2-135m-instruct"


def test_history_lists_each_runs_model(client):
    ids = [saved(GEMMA).id, saved(MODEL).id]
    listed = client.post("/api/runs/summaries", {"ids": ids}, content_type="application/json").json()
    assert [r["model_id"] for r in listed["runs"]] == ["gemma-3-270m", "smollm2-135m-instruct"]
    assert [r["model"] for r in listed["runs"]] == ["gemma-3-270m", "SmolLM2-135M-Instruct"]
