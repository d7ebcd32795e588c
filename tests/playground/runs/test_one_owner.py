"""Each run is written once, by whoever ends its request first (playground/runs/recording.py): the
worker that finished or cancelled it, or the connection's watchdog that saves it as failed when its
worker went silent. A second ending, in either order, is a no-op answered with the record that
stands, never an integrity error."""

from __future__ import annotations

import pytest

from playground.edge.watchdog import WORKER_LOST, relayed_recorder, save_failed_run
from playground.runs.models import Run
from playground.runs.recording import RunRecorder
from tests.playground.edge.test_liveness import STARTED, TOKEN

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])

RECORD = {"prompt": "The", "mode": "completion", "system": None, "prefix_tokens": []}
LOST = {"type": "error", "request_id": "r", "error": {"code": WORKER_LOST, "message": "gone", "param": None}}
CANCELLED = {"type": "done", "request_id": "r", "reason": "cancelled", "text": " capital", "tail": ""}


def both_ends() -> tuple[RunRecorder, RunRecorder]:
    """The worker's recorder and the connection's relayed one, after the same ``started`` and token."""
    worker = RunRecorder("r", RECORD)
    started = worker.observe(dict(STARTED))  # gains the run id and delete token the client is told
    worker.observe(TOKEN)
    relayed = relayed_recorder("r", RECORD, started)
    relayed.observe(TOKEN)
    return worker, relayed


def test_the_worker_ends_it_first_then_the_watchdog_changes_nothing(db_alias):
    worker, relayed = both_ends()
    done = worker.finish(CANCELLED)
    assert done["run_id"] == worker.run_id and "save_error" not in done
    assert save_failed_run(relayed, LOST) == worker.run_id  # the error still names the saved run
    (run,) = Run.objects.filter(pk=worker.run_id)
    assert run.status == Run.Status.CANCELLED and run.error is None and len(run.tokens) == 1


def test_the_watchdog_ends_it_first_then_the_worker_changes_nothing(db_alias):
    worker, relayed = both_ends()
    assert save_failed_run(relayed, LOST) == worker.run_id
    done = worker.finish(CANCELLED)
    assert done["run_id"] == worker.run_id and done["delete_token"] == worker.delete_token
    assert "save_error" not in done  # not "UNIQUE constraint failed"
    (run,) = Run.objects.filter(pk=worker.run_id)
    assert run.status == Run.Status.FAILED and run.error["code"] == WORKER_LOST


def test_one_recorder_ending_twice_writes_once(db_alias):
    worker, _ = both_ends()
    assert worker.fail(LOST) == worker.run_id
    assert worker.finish(CANCELLED)["run_id"] == worker.run_id
    assert worker.fail(LOST) == worker.run_id
    assert Run.objects.filter(pk=worker.run_id).get().status == Run.Status.FAILED


def test_saving_a_run_leaves_no_debug_query_log_behind(db_alias, settings):
    """The decode thread serves no request, so nothing else empties its connection's debug query log
    (DEBUG on, as in the dev settings): a run's INSERT, all its tokens included, must not stay there."""
    from django.db import connections

    settings.DEBUG = True
    worker, _ = both_ends()
    worker.finish(CANCELLED)
    assert Run.objects.filter(pk=worker.run_id).exists()
    assert len(connections[db_alias].queries_log) <= 1  # at most the read just above
