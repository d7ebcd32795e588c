"""Exports written by an earlier version of this server import, and export again byte for byte
(on SQLite): the files in ``exports/`` are what ``/r/<id>.json`` and ``/compare/<ids>.json`` answered
(schema ``token-playground.run`` / ``.comparison``, version 3) for runs of every kind made by the
worker on the tiny model. Only ``id``, ``source``, ``imported_from`` (and a branch's
``parent_run``, whose parent is not saved here) say that the copy is a copy, and the fields
added since these files were written: a token's ``origin`` (after ``forced``: what its
``forced``, ``draw`` and stages imply), ``draw_interval`` (exported as null after
``draw``) and ``watched`` (exported as [] after ``elapsed_ms``), then any later one of
``TokenEvent.LATER`` (as a token saved before it reads), the request's ``watch`` ([] after
``prefix_tokens``) and ``typed_tokens`` (0 after ``watch``), the sampling parameter ``grammar``
(null after ``dynatemp_exponent``; the old ``sampler_order`` is kept as it was), a run's
``prompt_surprisal`` (null after ``prompt_tokens``) and ``speculative`` (null after ``beam_steps``),
and its model's ``id`` (the default model, ``smollm2-135m-instruct``, first in ``model``: these runs
were made before several models)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from playground.runs.compare import METRIC
from playground.wire.token_event import TokenEvent, implied_origin

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])

EXPORTS = Path(__file__).parent / "exports"
RUN_FILES = sorted(EXPORTS.glob("run-*.json"))


def _as_served(data: dict) -> bytes:
    """JSON as the export endpoints write it (``ensure_ascii`` off, the default separators)."""
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


def _assert_served_as(served: bytes, expected: dict, db_alias: str) -> None:
    """The bytes the server wrote; on PostgreSQL the same JSON (its ``jsonb`` columns, ``params``
    and ``usage`` among them, give their keys back in an order of their own, as they always did)."""
    if db_alias == "postgres":
        assert json.loads(served) == expected
    else:
        assert served == _as_served(expected)


def _import(client, content: bytes) -> list[str]:
    answer = client.post("/api/runs/import", data=content, content_type="application/json")
    assert answer.status_code == 201, answer.content
    return [run["id"] for run in answer.json()["runs"]]


def _with(data: dict, after: str, key: str, value) -> dict:
    """``data`` with ``key`` after ``after``, as exported now, where a file written before it has none."""
    if key in data:
        return data
    keys = list(data)
    at = keys.index(after) + 1
    return {k: data[k] for k in keys[:at]} | {key: value} | {k: data[k] for k in keys[at:]}


# Where the token fields added since these files were written stand in an export today (by hand).
ADDED_AFTER = {"origin": "forced", "draw_interval": "draw", "watched": "elapsed_ms"}


def _as_exported_now(token: dict) -> dict:
    # (these runs typed and branched nothing: the origin their fields imply)
    then = {"origin": implied_origin(token), "draw_interval": None, "watched": []}
    for name, after in ADDED_AFTER.items():
        token = _with(token, after, name, then[name])
    # A field added after these (``TokenEvent.LATER``) follows them, as a token saved before it reads.
    newer = [name for name in TokenEvent.LATER if name not in ADDED_AFTER and name not in token]
    return token | {name: TokenEvent.filled(token)[name] for name in newer}


def _copy(run: dict, new_id: str, parent: str | None) -> dict:
    tokens = [_as_exported_now(token) for token in run["tokens"]]
    request = _with(_with(run["request"], "prefix_tokens", "watch", []), "watch", "typed_tokens", 0)
    request = request | {"params": _with(request["params"], "dynatemp_exponent", "grammar", None)}
    run = _with(_with(run, "prompt_tokens", "prompt_surprisal", None), "beam_steps", "speculative", None)
    return run | {
        "model": {"id": "smollm2-135m-instruct"} | run["model"],
        "id": new_id,
        "source": "imported",
        "imported_from": run["id"],
        "parent_run": parent,
        "request": request,
        "tokens": tokens,
    }


def test_the_files_are_as_the_server_wrote_them():
    assert {path.stem for path in RUN_FILES} >= {
        f"run-{kind}" for kind in ("plain", "chat", "conversation", "turns", "samples", "beams", "cancelled", "failed", "branch")
    }
    for path in [*RUN_FILES, EXPORTS / "comparison-branch.json"]:
        content = path.read_bytes()
        assert _as_served(json.loads(content)) == content, path.name


@pytest.mark.parametrize("path", RUN_FILES, ids=lambda path: path.stem)
def test_a_saved_run_export_imports_and_exports_the_same_bytes(client, db_alias, path):
    content = path.read_bytes()
    written = json.loads(content)
    (copy_id,) = _import(client, content)
    again = client.get(f"/r/{copy_id}.json")
    assert again.status_code == 200
    expected = written | {"run": _copy(written["run"], copy_id, None)}  # a parent not saved here: dropped
    _assert_served_as(again.content, expected, db_alias)


def test_a_saved_comparison_imports_as_a_branch_of_the_new_parent_and_exports_the_same_bytes(client, db_alias):
    content = (EXPORTS / "comparison-branch.json").read_bytes()
    written = json.loads(content)
    parent_id, branch_id = _import(client, content)
    again = client.get(f"/compare/{parent_id},{branch_id}.json")
    parent, branch = written["runs"]
    assert branch["parent_run"] == parent["id"]
    expected = written | {
        "runs": [_copy(parent, parent_id, None), _copy(branch, branch_id, parent_id)],
        "comparison": _comparison_now(written["comparison"], written["runs"]) | {"runs": [parent_id, branch_id]},
    }
    _assert_served_as(again.content, expected, db_alias)


def _comparison_now(comparison: dict, runs: list[dict]) -> dict:
    """The derived comparison as this server computes it (ignored on import): the file's runs have
    the same settings and share their tokens up to the branch's extra one, so each TV the file
    gave as a range (0–0.9998: the top-3 lists hold almost none of the tiny model's mass) is now
    exactly 0 (issue 30), and the metric says so; the note counts positions from 1, as the pages do;
    each cell says its token's origin (what the run's token implies: these runs have none stored)."""

    def cell(token: dict | None, run: dict, index: int) -> dict | None:
        if token is None:
            return None
        (stored,) = [t for t in run["tokens"] if t["sample"] == 0 and t["index"] == index]
        return token | {"origin": implied_origin(stored)}

    positions = [
        position
        | {
            "tokens": [cell(t, run, position["index"]) for t, run in zip(position["tokens"], runs, strict=True)],
            "divergence": [
                None
                if d is None
                else {"context": "same", "same_settings": True, "lower": 0.0, "upper": 0.0}
                | {"shared_tokens": d["shared_tokens"]}
                for d in position["divergence"]
            ],
        }
        for position in comparison["positions"]
    ]
    note = comparison["note"].replace("at position 4 one run", "at position 5 one run")  # counted from 1 now
    return comparison | {"metric": METRIC, "positions": positions, "note": note}
