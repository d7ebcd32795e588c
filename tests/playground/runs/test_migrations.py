"""``Run`` and ``ApiKey`` moved to apps of their own (``runs``, ``openai_api``) without moving data.

A database made before the move (``playground`` 0001–0005, the models in the ``playground`` app)
keeps every saved run and key once migrated: the new models read the same tables. On SQLite and on
PostgreSQL, from an empty database.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import call_command
from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from playground.openai_api.models import ApiKey, hash_api_key
from playground.runs import schema
from playground.runs.ids import hash_delete_token
from playground.runs.models import Run
from playground.runs.token_rows import stored_row_from_event
from tests.playground.runs import helpers

pytestmark = pytest.mark.django_db(databases=["default", "postgres"], transaction=True)

BEFORE_THE_MOVE = [("playground", "0005_run_messages")]  # the apps runs and openai_api did not exist
SECRET = "pg-a-key-made-before-the-move"
CREATED = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)


def _migrate(alias: str, targets: list[tuple[str, str | None]]) -> MigrationExecutor:
    executor = MigrationExecutor(connections[alias])
    executor.migrate(targets)
    executor.loader.build_graph()  # what is applied now
    return executor


def _latest(executor: MigrationExecutor) -> list[tuple[str, str]]:
    return executor.loader.graph.leaf_nodes()


def _old_run(model, **fields):
    """A run as the ``playground`` app's historical model stores it (no ``save`` checks)."""
    return model.objects.create(
        **{
            "delete_token_hash": hash_delete_token("delete-me"),
            "created_at": CREATED,
            "status": "complete",
            "prompt": "The sky is",
            "mode": "completion",
            "prompt_tokens": [[504, "The"], [6276, " sky"], [314, " is"]],
            "params": {"temperature": 0.7, "seed": 7, "max_tokens": 1},
            "seed": 2**63 - 1,
            "top_n": 3,
            "model_name": "SmolLM2-135M-Instruct",
            "manifest_sha256": "ab" * 32,
            "onnxruntime_version": "1.31.1",
            "execution_provider": "CPUExecutionProvider",
            "reason": "max_tokens",
            "text": " blue",
            "tokens": [stored_row_from_event(helpers.token(0, 4162, " blue", [(4162, " blue", 0.5, 0.6)]))],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        }
        | fields
    )


def test_runs_and_keys_saved_before_the_move_are_read_by_the_new_models(db_alias):
    connection = connections[db_alias]
    executor = _migrate(db_alias, [("playground", None)])  # an empty database: no table of ours
    assert not {"playground_run", "playground_apikey"} & set(connection.introspection.table_names())

    executor = _migrate(db_alias, BEFORE_THE_MOVE)
    old = executor.loader.project_state(BEFORE_THE_MOVE).apps
    assert ("runs", "0001_initial") not in executor.loader.applied_migrations
    parent = _old_run(old.get_model("playground", "Run"), messages=[["user", "The sky is"]])
    branch = _old_run(old.get_model("playground", "Run"), parent=parent, branch_index=1, status="cancelled")
    old.get_model("playground", "ApiKey").objects.create(name="before", key_hash=hash_api_key(SECRET), prefix=SECRET[:11])

    executor = _migrate(db_alias, _latest(executor))

    assert ("playground", "0006_runs_and_api_keys_moved") in executor.loader.applied_migrations
    tables = set(connection.introspection.table_names())
    assert {"playground_run", "playground_apikey"} <= tables  # the same tables: nothing copied
    assert not {"runs_run", "openai_api_apikey"} & tables
    moved = Run.objects.get(pk=parent.pk)
    assert (moved.created_at, moved.seed, moved.text, moved.conversation()) == (
        CREATED,
        2**63 - 1,
        " blue",
        [{"role": "user", "content": "The sky is"}],
    )
    assert moved.check_delete_token("delete-me")
    assert [b.pk for b in moved.branches.all()] == [branch.pk]
    assert Run.objects.get(pk=branch.pk).status == Run.Status.CANCELLED
    assert schema.run_export(moved)["run"]["tokens"][0]["token"] == " blue"
    assert ApiKey.valid(SECRET)
    assert not ApiKey.valid(SECRET + "x")


def test_a_fresh_database_migrates_to_the_models_as_they_are(db_alias):
    executor = _migrate(db_alias, [("playground", None)])
    _migrate(db_alias, _latest(executor))
    run = _old_run(Run)
    key, secret = ApiKey.create("fresh")
    assert Run.objects.get(pk=run.pk).text == " blue"
    assert ApiKey.valid(secret) and key.prefix == secret[:11]
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # exits 1 if a model lacks a migration
