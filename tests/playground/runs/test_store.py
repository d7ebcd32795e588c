"""Saving, permalinks, export/import, comparison, history and delete, on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import json
import re

import pytest
from django.db import OperationalError

from playground.runs import schema
from playground.runs.models import Run
from playground.runs.token_rows import ENVELOPE_KEYS
from tests.playground.runs import helpers

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])
ID = re.compile(r"^[A-Za-z0-9_-]{22,}$")


def saved(evts=None, **kw):
    done = helpers.record(evts or helpers.events(**kw))
    assert done["run_id"], done
    return Run.objects.get(pk=done["run_id"]), done


def post(client, url, body, content_type="application/json"):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.post(url, data=data, content_type=content_type)


# Saving.


def test_recorder_saves_everything_and_done_carries_the_id(db_alias):
    evts = helpers.events()
    done = helpers.record(evts)
    assert ID.match(done["run_id"]) and ID.match(done["delete_token"])
    assert "save_error" not in done
    run = Run.objects.using(db_alias).get(pk=done["run_id"])
    assert run.status == "complete" and run.reason == "max_tokens"
    assert run.prompt == "The" and run.mode == "completion" and run.system is None
    assert run.prompt_tokens == [[0, "<|endoftext|>"], [504, "The"]]
    assert run.params == helpers.params() and run.seed == 42 and run.top_n == 3 and run.use_cache
    assert (run.model_name, run.manifest_sha256, run.execution_provider, run.onnxruntime_version) == (
        "SmolLM2-135M-Instruct",
        "ab" * 32,
        "CPUExecutionProvider",
        "1.31.1",
    )
    assert run.text == " Paris. It" and run.timing["time_to_first_token_ms"] == 41.2
    # The delete token is not stored, only its hash.
    assert done["delete_token"] not in run.delete_token_hash and run.check_delete_token(done["delete_token"])
    # Every token's trace comes back exactly as it was sent.
    exported = schema.run_to_dict(run)["tokens"]
    sent = [{k: v for k, v in e.items() if k not in ENVELOPE_KEYS} for e in evts[1:-1]]
    assert exported == sent
    assert run.parent is None and run.branch_index is None


def test_cancelled_and_failed_runs_are_saved_as_partial(db_alias):
    evts = helpers.events(reason="cancelled")
    run, _ = saved(evts)
    assert run.status == "cancelled" and len(run.tokens) == 3

    from playground.runs.recording import RunRecorder

    recorder = RunRecorder("r", {"prompt": "The", "mode": "completion", "system": None})
    for event in helpers.events()[:3]:  # started and two tokens, then the model fails
        recorder.observe(event)
    run_id = recorder.fail({"type": "error", "error": {"code": "generation_failed", "message": "boom", "param": None}})
    failed = Run.objects.get(pk=run_id)
    assert failed.status == "failed" and failed.reason == "" and len(failed.tokens) == 2
    assert failed.text == " Paris." and failed.error["code"] == "generation_failed"


def test_a_run_that_never_started_is_not_saved(db_alias):
    from playground.runs.recording import RunRecorder

    recorder = RunRecorder("r", {"prompt": "x", "mode": "completion"})
    assert recorder.fail({"type": "error", "error": {"code": "prompt_too_long", "message": "m", "param": "prompt"}}) is None
    assert Run.objects.count() == 0


def test_a_database_error_never_stops_the_done_event(db_alias, monkeypatch):
    def broken(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(Run, "save", broken)
    evts = helpers.events()
    done = helpers.record(evts)
    assert done["run_id"] is None and "OperationalError" in done["save_error"]
    assert done["reason"] == "max_tokens" and done["text"] == evts[-1]["text"]
    assert Run.objects.count() == 0


def test_ids_are_random_and_long():
    ids = {helpers.record(helpers.events())["run_id"] for _ in range(20)}
    assert len(ids) == 20 and all(len(i) >= 22 for i in ids)  # 16 random bytes: 128 bits


# Permalinks.


def test_run_page_renders_from_the_database(client, db_alias):
    run, _ = saved()
    response = client.get(f"/r/{run.id}")
    assert response.status_code == 200
    html = response.content.decode()
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert run.id in html and "CPUExecutionProvider" in html and "max_tokens" in html
    data = json.loads(re.search(r'<script id="run-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert data == json.loads(json.dumps(schema.run_to_dict(run)))
    assert f'data-seed="{run.seed}"' in html
    assert 'href="/?prompt=The&amp;mode=completion' in html and "temperature=0.7" in html


def test_run_page_lists_the_settings_that_differ_from_the_defaults_as_json(client, db_alias):
    run, _ = saved(stop=["\n"], ignore_eos=True, top_k=0)
    html = client.get(f"/r/{run.id}").content.decode()
    changed = re.search(r'data-testid="changed-settings">(.*?)</table>', html, re.S).group(1)
    names = re.findall(r'<th scope="row"><code>(\w+)</code>', changed)
    assert names == ["ignore_eos", "max_tokens", "stop", "temperature", "top_p"]  # top_k 0 and seed left out
    assert "<code>[&quot;\\n&quot;]</code>" in changed and "<code>true</code>" in changed  # JSON, not Python


def test_run_json_is_the_versioned_export(client, db_alias):
    run, _ = saved()
    body = client.get(f"/r/{run.id}.json").json()
    assert body["schema"] == "token-playground.run" and body["version"] == 3
    assert body["run"]["id"] == run.id and body["run"]["request"]["seed"] == 42
    assert body["run"]["request"]["messages"] is None and body["run"]["request"]["continue_final_message"] is False
    assert body["run"]["tokens"][0]["alternatives"][2]["removed_by"] == "top_p"


def test_a_seed_above_2_to_the_53_survives_exactly(client, db_alias):
    seed = 2**63 - 1
    run, _ = saved(seed=seed)
    assert client.get(f"/r/{run.id}.json").json()["run"]["request"]["seed"] == seed
    assert f'data-seed="{seed}"' in client.get(f"/r/{run.id}").content.decode()


@pytest.mark.parametrize(
    "path, code, param",
    [
        ("/r/short", "invalid_id", "id"),
        ("/r/has.dot-in-it-aaaaaaaaaaaa", "invalid_id", "id"),
        ("/r/" + "A" * 22, "not_found", "id"),
        ("/r/" + "A" * 22 + "%0A", "invalid_id", "id"),  # the whole id is checked: no line end after it
        ("/compare/" + "A" * 22, "invalid_id", "ids"),
        ("/compare/" + ",".join(["A" * 22] * 5), "invalid_id", "ids"),
    ],
)
def test_bad_and_unknown_ids_are_404_in_html_and_json(client, db_alias, path, code, param):
    page = client.get(path)
    assert page.status_code == 404 and "Not found" in page.content.decode()
    body = client.get(path + ".json")
    assert body.status_code == 404
    assert body.json()["error"]["code"] == code and body.json()["error"]["param"] == param


def test_compare_names_the_unknown_id(client, db_alias):
    run, _ = saved()
    body = client.get(f"/compare/{run.id},{'B' * 22}.json").json()
    assert body["error"] == {"code": "not_found", "message": f"no saved run has the id {'B' * 22!r}", "param": "ids[1]"}


# Comparison.


def test_compare_aligns_marks_divergence_and_lists_only_differing_settings(client, db_alias):
    a, _ = saved()
    changed = copy.deepcopy(helpers.PARIS)
    changed[2] = (378, " The", [(314, " It", 0.4, 0.3), (378, " The", 0.35, 0.7), (11, " and", 0.1, 0.0)])
    b, _ = saved(tokens=changed, temperature=1.2)
    body = client.get(f"/compare/{a.id},{b.id}.json").json()
    assert body["schema"] == "token-playground.comparison"
    comparison = body["comparison"]
    assert comparison["differing"] == [{"name": "params.temperature", "values": [0.7, 1.2]}]
    assert comparison["first_divergence"] == 2 and comparison["shared_draws"] == 3
    assert "settings, not from chance" in comparison["note"]
    positions = comparison["positions"]
    assert [p["same"] for p in positions] == [True, True, False]
    same = {"context": "same", "same_settings": False}
    assert positions[0]["divergence"][1] == same | {"lower": 0.0, "upper": 0.0, "shared_tokens": 3}
    # position 2: ½(|0.5−0.3| + |0.5−0.7| + 0) = 0.2; all mass is in the shared tokens.
    assert positions[2]["divergence"][1]["lower"] == pytest.approx(0.2)
    assert positions[2]["divergence"][1]["upper"] == pytest.approx(0.2)
    assert [c["prob"] for c in positions[2]["tokens"]] == [0.5, 0.7]

    html = client.get(f"/compare/{a.id},{b.id}").content.decode()
    assert "first divergence" in html and 'data-setting="params.temperature"' in html
    assert 'data-setting="params.top_p"' not in html


def test_tv_bounds_account_for_unstored_mass(db_alias):
    a, _ = saved()
    tokens = [(7042, " Paris", [(7042, " Paris", 0.5, 0.4), (253, " a", 0.2, 0.1), (9, " the", 0.1, 0.1)])]
    b, _ = saved(tokens=tokens, seed=7)
    from playground.runs.compare import compare

    result = compare([a, b])
    d = result["positions"][0]["divergence"][1]
    # shared: |0.7−0.4| + |0.3−0.1| + |0−0.1| = 0.6; outside: 0 and 0.4 → lower ½(0.6 + 0.4), upper ½(0.6 + 0.4)
    assert d["lower"] == pytest.approx(0.5) and d["upper"] == pytest.approx(0.5)
    assert "different seeds" in result["note"]
    assert {"name": "seed", "values": [42, 7]} in result["differing"]


# Import.


def test_import_round_trip_makes_new_runs_and_leaves_old_ones_alone(client, db_alias):
    run, _ = saved()
    before = Run.objects.get(pk=run.id)
    export = client.get(f"/r/{run.id}.json").json()
    answer = post(client, "/api/runs/import", export)
    assert answer.status_code == 201, answer.content
    created = answer.json()["runs"]
    assert len(created) == 1 and created[0]["id"] != run.id and created[0]["delete_token"]
    again = client.get(f"/r/{created[0]['id']}.json").json()["run"]
    assert again["tokens"] == export["run"]["tokens"] and again["request"] == export["run"]["request"]
    assert again["source"] == "imported" and again["imported_from"] == run.id
    after = Run.objects.get(pk=run.id)
    assert (after.tokens, after.text, after.status) == (before.tokens, before.text, before.status)


def test_imported_params_are_normalized_like_live_ones(client, db_alias):
    run, _ = saved()
    export = client.get(f"/r/{run.id}.json").json()
    export["run"]["request"]["params"] = {"temperature": 0.7, "seed": run.seed, "max_tokens": 3, "top_p": 0.9}
    created = post(client, "/api/runs/import", export).json()["runs"][0]["id"]
    params = client.get(f"/r/{created}.json").json()["run"]["request"]["params"]
    assert params == run.params  # every default filled in, so a comparison lists only real differences
    compared = client.get(f"/compare/{run.id},{created}.json").json()["comparison"]
    assert compared["differing"] == []


def test_import_a_comparison(client, db_alias):
    a, _ = saved()
    b, _ = saved(temperature=1.0)
    export = client.get(f"/compare/{a.id},{b.id}.json").json()
    answer = post(client, "/api/runs/import", export).json()
    assert len(answer["runs"]) == 2 and answer["compare_url"].startswith("/compare/")
    assert client.get(answer["compare_url"]).status_code == 200


def _bad(export, path, value):
    doc = copy.deepcopy(export)
    target = doc
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    last = keys[-1]
    if value is KeyError:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return doc


@pytest.mark.parametrize(
    "path, value, field",
    [
        ("version", 4, "version"),
        ("schema", "other", "schema"),
        ("run.status", "done", "run.status"),
        ("run.request.prompt", "", "run.request.prompt"),
        ("run.request.params.temperature", 5, "run.request.params.temperature"),
        ("run.request.seed", -1, "run.request.seed"),
        ("run.request.params.seed", 43, "run.request.params.seed"),
        ("run.tokens.1.prob", 1.5, "run.tokens[1].prob"),
        ("run.tokens.0.alternatives.2.raw_prob", "x", "run.tokens[0].alternatives[2].raw_prob"),
        ("run.tokens.2.id", True, "run.tokens[2].id"),
        ("run.tokens.0.surprise", 1, "run.tokens[0].surprise"),
        ("run.prompt_tokens", [], "run.prompt_tokens"),
        ("run.result.reason", "cancelled", "run.result.reason"),
        ("run.model", KeyError, "run.model"),
    ],
)
def test_bad_imports_name_the_field_and_change_nothing(client, db_alias, path, value, field):
    run, _ = saved()
    export = client.get(f"/r/{run.id}.json").json()
    count = Run.objects.count()
    answer = post(client, "/api/runs/import", _bad(export, path, value))
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["code"] == "invalid_export" and error["param"] == field, error
    assert error["message"]
    assert Run.objects.count() == count


def test_a_comparison_with_one_bad_run_imports_nothing(client, db_alias):
    a, _ = saved()
    b, _ = saved()
    export = client.get(f"/compare/{a.id},{b.id}.json").json()
    export["runs"][1]["tokens"][0]["index"] = -1
    answer = post(client, "/api/runs/import", export)
    assert answer.json()["error"]["param"] == "runs[1].tokens[0].index"
    assert Run.objects.count() == 2


@pytest.mark.parametrize(
    "body, content_type, status, code",
    [
        ("{not json", "application/json", 400, "invalid_json"),
        ("[1, 2]", "application/json", 400, "invalid_export"),
        ('{"a": NaN}', "application/json", 400, "invalid_json"),
        ("{}", "text/plain", 415, "unsupported_media_type"),
    ],
)
def test_import_rejects_what_is_not_an_export(client, db_alias, body, content_type, status, code):
    answer = post(client, "/api/runs/import", body, content_type)
    assert answer.status_code == status and answer.json()["error"]["code"] == code


# History and delete.


def test_summaries_answer_only_for_given_ids_and_search_prompts(client, db_alias):
    a, _ = saved()
    b = helpers.record(helpers.events(), prompt="Once upon a time")["run_id"]
    unknown = "C" * 22
    body = post(client, "/api/runs/summaries", {"ids": [b, a.id, unknown, "bad id"]}).json()
    assert [r["id"] for r in body["runs"]] == [b, a.id]
    assert body["missing"] == [unknown, "bad id"]
    assert body["runs"][0]["url"] == f"/r/{b}"
    found = post(client, "/api/runs/summaries", {"ids": [a.id, b], "q": "UPON"}).json()
    assert [r["id"] for r in found["runs"]] == [b] and found["missing"] == []
    bad = post(client, "/api/runs/summaries", {"ids": "x"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "ids"
    assert post(client, "/api/runs/summaries", {"ids": [], "all": True}).json()["error"]["param"] == "all"


def test_delete_needs_the_runs_own_token(client, db_alias):
    run, done = saved()
    other, other_done = saved()
    wrong = post(client, f"/api/runs/{run.id}/delete", {"delete_token": other_done["delete_token"]})
    assert wrong.status_code == 403 and wrong.json()["error"]["param"] == "delete_token"
    missing = post(client, f"/api/runs/{run.id}/delete", {})
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "delete_token"
    assert post(client, f"/api/runs/{run.id}/delete", {"delete_token": done["delete_token"]}).status_code == 204
    assert client.get(f"/r/{run.id}").status_code == 404
    assert Run.objects.filter(pk=other.id).exists()
    gone = post(client, f"/api/runs/{run.id}/delete", {"delete_token": done["delete_token"]})
    assert gone.status_code == 404


def test_history_page_renders(client, db_alias):
    response = client.get("/history")
    assert response.status_code == 200 and b"history-page.js" in response.content


def test_the_run_id_is_announced_at_started_and_kept_by_every_ending(db_alias):
    evts = helpers.events()
    recorder = helpers.RunRecorder("r", {"prompt": "The", "mode": "completion", "system": None})
    started = recorder.observe(evts[0])
    assert started["run_id"] and started["delete_token"] and "run_id" not in evts[0]  # the input is not changed
    for event in evts[1:-1]:
        recorder.observe(event)
    done = recorder.finish(evts[-1])
    assert (done["run_id"], done["delete_token"]) == (started["run_id"], started["delete_token"])
    failing = helpers.RunRecorder("f", {"prompt": "The", "mode": "completion", "system": None})
    announced = failing.observe(helpers.events()[0])["run_id"]
    assert failing.fail({"type": "error", "error": {"code": "generation_failed", "message": "x", "param": None}}) == announced
    assert Run.objects.get(pk=announced).status == "failed"


def test_the_run_page_names_the_model_by_its_one_display_name(client, db_alias):
    """The catalogue's name, as the picker and /api/models say it ("SmolLM2 135M Instruct"), not the
    manifest's ("SmolLM2-135M-Instruct"; Gemma's manifest says "gemma-3-270m"): issue 30, item 11."""
    from inference.model_catalog import CATALOG, display_name

    run, _ = saved()
    html = client.get(f"/r/{run.id}").content.decode()
    shown = re.search(r'data-stat="model">(.*?)</dd>', html).group(1)
    assert shown.startswith(f"{CATALOG['smollm2-135m-instruct'].display_name} on CPUExecutionProvider")
    assert display_name("gemma-3-270m") == CATALOG["gemma-3-270m"].display_name != "gemma-3-270m"
    assert display_name("some-old-model", "Old-Model-1B") == "Old-Model-1B"  # a model the catalogue lost
    assert display_name("some-old-model") == "some-old-model"
