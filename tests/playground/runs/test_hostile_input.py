"""No input to a page or JSON endpoint of saved runs gets a 500: odd ids and id lists, wrong
methods, huge or broken bodies, wrong content types, wrong shapes, mutated exports. JSON endpoints
answer ``{"error": {"code", "message", "param"}}``. The Django test client re-raises any exception
a view lets out, so a 500 cannot pass unnoticed."""

from __future__ import annotations

import copy
import json
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from playground.runs import views
from playground.runs.models import Run
from tests.playground.runs import helpers

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])

UNKNOWN = "U" * 22
ODD_IDS = [
    "short",
    "A" * 15,
    "A" * 44,
    "A" * 10_000,
    "has.dot-aaaaaaaaaaaaaaaa",
    "ü" * 22,
    "%00",
    "%ED%A0%80",
    "%FF%FE",
    "..",
    "%2E%2E",
    "a%20b" + "c" * 20,
    "%0A" * 20,
    quote("\U0001f600" * 20),
    "-" * 22,
    UNKNOWN,
]


def saved() -> tuple[Run, dict]:
    done = helpers.record(helpers.events())
    return Run.objects.get(pk=done["run_id"]), done


def assert_json_error(response, status: int, code: str | None = None, param: object = ...) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"code", "message", "param"} and error["message"], error
    if code is not None:
        assert error["code"] == code, error
    if param is not ...:
        assert error["param"] == param, error
    return error


@pytest.mark.parametrize("odd", ODD_IDS)
def test_odd_run_ids_are_404_naming_the_id(client, db_alias, odd):
    page = client.get(f"/r/{odd}")
    assert page.status_code == 404 and b"Not found" in page.content
    error = assert_json_error(client.get(f"/r/{odd}.json"), 404, param="id")
    assert error["code"] in ("invalid_id", "not_found") and len(error["message"]) < 200  # a short excerpt
    assert_json_error(
        client.post(f"/api/runs/{odd}/delete", data={"delete_token": "t"}, content_type="application/json"), 404, param="id"
    )


@pytest.mark.parametrize(
    "ids, param",
    [
        (",", "ids[0]"),
        (",,,", "ids[0]"),
        (",,,,,,,,", "ids"),
        ("," * 100_000, "ids"),
        ("RUN,", "ids[1]"),
        ("RUN,RUN,RUN,RUN,RUN", "ids"),
        ("RUN," + "A" * 5_000, "ids[1]"),
        (f"RUN,{UNKNOWN}", "ids[1]"),
        (f"{UNKNOWN},RUN", "ids[0]"),
        ("RUN,%ED%A0%80", "ids[1]"),
        ("RUN;RUN", "ids"),
        ("RUN", "ids"),
    ],
)
def test_odd_id_lists_are_404_naming_the_id(client, db_alias, ids, param):
    run, _ = saved()
    ids = ids.replace("RUN", run.id)
    page = client.get(f"/compare/{ids}")
    assert page.status_code == 404 and b"Not found" in page.content
    error = assert_json_error(client.get(f"/compare/{ids}.json"), 404, param=param)
    assert len(error["message"]) < 200


def test_a_run_compared_with_itself_and_runs_of_different_kinds_compare(client, db_alias):
    run, _ = saved()
    beams = helpers.events()
    beams[0]["params"] = helpers.params(num_beams=2, temperature=1.0, top_p=1.0)
    beam_run = Run.objects.get(pk=helpers.record([beams[0], beams[-1]])["run_id"])  # no tokens at all
    for ids in (f"{run.id},{run.id}", f"{run.id},{beam_run.id}", f"{beam_run.id},{beam_run.id},{run.id}"):
        assert client.get(f"/compare/{ids}").status_code == 200
        assert client.get(f"/compare/{ids}.json").status_code == 200


@pytest.mark.parametrize("method", ["post", "put", "delete", "patch"])
def test_exports_answer_get_only_with_a_json_error(client, db_alias, method):
    run, _ = saved()
    for path in (f"/r/{run.id}.json", f"/compare/{run.id},{run.id}.json"):
        response = getattr(client, method)(path)
        assert_json_error(response, 405, "method_not_allowed", None)
        assert response["Allow"] == "GET, HEAD"
    assert getattr(client, method)(f"/r/{run.id}").status_code == 405
    assert client.head(f"/r/{run.id}.json").status_code == 200


@pytest.mark.parametrize("path", ["/api/runs/summaries", "/api/runs/import", f"/api/runs/{UNKNOWN}/delete"])
@pytest.mark.parametrize("method", ["get", "put", "delete", "head"])
def test_json_posts_answer_post_only_with_a_json_error(client, db_alias, path, method):
    response = getattr(client, method)(path)
    assert response.status_code == 405 and response["Allow"] == "POST"
    if method != "head":
        assert_json_error(response, 405, "method_not_allowed")


BROKEN_BODIES = [
    (b"", "invalid_json"),
    (b"{not json", "invalid_json"),
    (b"\xff\xfe{}", "invalid_json"),
    (b"[" * 4000, "invalid_json"),
    (b'{"a": NaN}', "invalid_json"),
    (b'{"a": 1e999}', "invalid_json"),
    (b'{"a": ' + b"9" * 50 + b"}", "invalid_json"),
    (b'"\\ud800', "invalid_json"),
    (b"\xef\xbb\xbf{}", "invalid_json"),
    (b"{}{}", "invalid_json"),
]


@pytest.mark.parametrize("path", ["/api/runs/summaries", "/api/runs/import", "/api/runs/RUN/delete"])
@pytest.mark.parametrize("body, code", BROKEN_BODIES)
def test_broken_json_bodies_are_400(client, db_alias, path, body, code):
    run, _ = saved()
    # (CONTENT_TYPE given again: the test client leaves it out for an empty body, a real client may not)
    response = client.post(
        path.replace("RUN", run.id), data=body, content_type="application/json", CONTENT_TYPE="application/json"
    )
    error = assert_json_error(response, 400, code)
    assert len(error["message"]) < 400
    assert Run.objects.filter(pk=run.id).exists()


@pytest.mark.parametrize("path", ["/api/runs/summaries", "/api/runs/import", "/api/runs/RUN/delete"])
@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        "",
        "application/json-patch+json",
        "text/json",
    ],
)
def test_other_content_types_are_415(client, db_alias, path, content_type):
    run, _ = saved()
    response = client.generic("POST", path.replace("RUN", run.id), data=b"{}", content_type=content_type)
    assert_json_error(response, 415, "unsupported_media_type", None)


def test_a_charset_parameter_is_fine(client, db_alias):
    run, _ = saved()
    response = client.post(
        "/api/runs/summaries", data=json.dumps({"ids": [run.id]}), content_type="application/json; charset=utf-8"
    )
    assert response.status_code == 200 and response.json()["runs"][0]["id"] == run.id


@pytest.mark.parametrize(
    "path, limit",
    [
        ("/api/runs/summaries", views.MAX_SUMMARY_BYTES),
        ("/api/runs/RUN/delete", views.MAX_DELETE_BYTES),
        ("/api/runs/import", views.MAX_IMPORT_BYTES),
    ],
)
def test_bodies_over_the_limit_are_413(client, db_alias, path, limit):
    run, _ = saved()
    body = b'{"x": "' + b"a" * limit + b'"}'
    assert_json_error(client.post(path.replace("RUN", run.id), data=body, content_type="application/json"), 413, "too_large")
    assert Run.objects.count() == 1


@pytest.mark.parametrize(
    "body, param",
    [
        (None, None),
        ([], None),
        ("ids", None),
        (1, None),
        ({}, "ids"),
        ({"ids": None}, "ids"),
        ({"ids": [1]}, "ids"),
        ({"ids": ["a"] * 501}, "ids"),
        ({"ids": [], "q": 5}, "q"),
        ({"ids": [], "q": "x" * 1001}, "q"),
        ({"ids": [], "all": True}, "all"),
        ({"ids": [], "\ud800": 1}, "\ud800"),
        ({"ids": {"a": 1}}, "ids"),
    ],
)
def test_summaries_of_the_wrong_shape_are_400(client, db_alias, body, param):
    assert_json_error(
        client.post("/api/runs/summaries", data=json.dumps(body), content_type="application/json"), 400, param=param
    )


@pytest.mark.parametrize(
    "body, status, param",
    [
        (None, 400, "delete_token"),
        ([], 400, "delete_token"),
        ({}, 400, "delete_token"),
        ({"delete_token": None}, 400, "delete_token"),
        ({"delete_token": 5}, 400, "delete_token"),
        ({"delete_token": ""}, 400, "delete_token"),
        ({"delete_token": ["x"]}, 400, "delete_token"),
        ({"delete_token": "x" * 201}, 400, "delete_token"),
        ({"delete_token": "x" * 200}, 403, "delete_token"),
    ],
)
def test_delete_bodies_of_the_wrong_shape_are_answered_by_field(client, db_alias, body, status, param):
    run, _ = saved()
    assert_json_error(
        client.post(f"/api/runs/{run.id}/delete", data=json.dumps(body), content_type="application/json"), status, param=param
    )
    assert Run.objects.filter(pk=run.id).exists()


@pytest.mark.parametrize(
    "body, param",
    [
        (None, "(file)"),
        ([], "(file)"),
        ("x", "(file)"),
        ({}, "schema"),
        ({"schema": None}, "schema"),
        ({"schema": "token-playground.run", "version": "2"}, "version"),
        ({"schema": "token-playground.run", "version": 2}, "run"),
        ({"schema": "token-playground.run", "version": 2, "run": []}, "run"),
        ({"schema": "token-playground.comparison", "version": 2, "runs": {}, "comparison": {}}, "runs"),
        ({"schema": "token-playground.comparison", "version": 1, "runs": [None, None], "comparison": None}, "runs[0]"),
    ],
)
def test_import_files_of_the_wrong_shape_are_400(client, db_alias, body, param):
    assert_json_error(
        client.post("/api/runs/import", data=json.dumps(body), content_type="application/json"), 400, "invalid_export", param
    )


@pytest.mark.parametrize(
    "path, value, param",
    [
        ("run.branch_index", 2**40, "run.branch_index"),
        ("run.model.context_window", 10**30, "run.model.context_window"),
        ("run.prompt_tokens.0.id", 2**63, "run.prompt_tokens[0].id"),
        ("run.tokens.0.index", 2**64, "run.tokens[0].index"),
        ("run.tokens.0.sample", 1, "run.tokens[0].sample"),  # a run of one sample
        ("run.created_at", "yesterday", "run.created_at"),
        ("run.created_at", "2026-11-21T23:30:05", "run.created_at"),
        ("run.id", "../../etc", "run.id"),
        ("run.parent_run", "x" * 100, "run.parent_run"),
        ("run.model.name", "m" * 201, "run.model.name"),
        ("run.result.usage", {"completion_tokens": "3"}, "run.result.usage.completion_tokens"),
        ("run.result.samples", [{"sample": 0}], "run.result.samples[0].reason"),
        ("run.result.error", {"code": "x", "message": "m", "param": None}, "run.result.error"),
        ("run.source", "elsewhere", "run.source"),
        ("run.request.params", None, "run.request.params.seed"),
        ("run.request.top_n", 10**30, "run.request.top_n"),
    ],
)
def test_values_no_column_can_hold_are_400_naming_the_field(client, db_alias, path, value, param):
    run, _ = saved()
    export = client.get(f"/r/{run.id}.json").json()
    target = export
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    target[keys[-1]] = value
    assert_json_error(
        client.post("/api/runs/import", data=json.dumps(export), content_type="application/json"), 400, "invalid_export", param
    )
    assert Run.objects.count() == 1


# Property-based: whatever JSON a client sends, and whatever part of a real export it changes.

TEXT = st.text(st.characters(exclude_categories=()), max_size=12)  # surrogates and NUL included
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
HYPOTHESIS = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, (*prefix, i))


@HYPOTHESIS
@given(body=JSON, odd_id=TEXT)
@example(body=None, odd_id="\ud800")  # a lone surrogate: its UTF-8-ish bytes percent-encoded in the path
def test_any_json_to_any_endpoint_is_never_a_500(client, db_alias, body, odd_id):
    data = json.dumps(body)
    for path in ("/api/runs/summaries", "/api/runs/import", f"/api/runs/{quote(odd_id, safe='', errors='surrogatepass')}/delete"):
        response = client.post(path, data=data, content_type="application/json")
        assert response.status_code in (200, 201, 400, 403, 404), (path, response.content[:300])
        if response.status_code >= 400:
            assert_json_error(response, response.status_code)
    for path in (
        f"/r/{quote(odd_id, safe='', errors='surrogatepass')}.json",
        f"/compare/{quote(odd_id, safe='', errors='surrogatepass')}.json",
    ):
        assert_json_error(client.get(path), 404)


@HYPOTHESIS
@given(data=st.data())
def test_a_mutated_export_imports_or_names_the_field(client, db_alias, data):
    if not Run.objects.exists():
        saved()
    run = Run.objects.filter(source="live").first()
    export = json.loads(client.get(f"/r/{run.id}.json").content)
    mutated = copy.deepcopy(export)
    path = data.draw(st.sampled_from([p for p in _paths(export) if p]))
    target = mutated
    for key in path[:-1]:
        target = target[key]
    if isinstance(target, dict) and data.draw(st.booleans()):
        del target[path[-1]]
    else:
        target[path[-1]] = data.draw(JSON)
    response = client.post("/api/runs/import", data=json.dumps(mutated), content_type="application/json")
    assert response.status_code in (201, 400), response.content[:300]
    if response.status_code == 400:
        error = assert_json_error(response, 400, "invalid_export")
        assert error["param"]
    else:
        copy_id = response.json()["runs"][0]["id"]
        assert client.get(f"/r/{copy_id}").status_code == 200
        assert client.get(f"/r/{copy_id}.json").status_code == 200
        assert client.get(f"/compare/{run.id},{copy_id}").status_code == 200
