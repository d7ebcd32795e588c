"""The live comparison page (/compare/live) and the comparison's link to it."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from playground.runs.models import Run
from playground.runs.views import default_params
from tests.playground.runs import helpers

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])


def test_live_page_renders_four_columns_two_shown_with_its_csp(client):
    response = client.get("/compare/live")
    assert response.status_code == 200
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "connect-src 'self';" in response["Content-Security-Policy"]
    html = response.content.decode()
    assert "runs/js/live-compare-page.js" in html
    for n in range(1, 5):
        assert f'id="c{n}-top_p"' in html and f'id="c{n}-top_p-error"' in html
    assert html.count("hidden disabled") == 2  # columns 3 and 4


def test_live_is_not_taken_for_run_ids(client):
    assert client.get("/compare/live.json").status_code == 404
    assert client.post("/compare/live").status_code == 405


def test_the_comparison_links_to_its_settings_live(client, db_alias):
    runs = []
    for overrides in ({"temperature": 0.2}, {"temperature": 1.5, "top_p": 1, "repetition_penalty": 1.3}):
        done = helpers.record(helpers.events(seed=2**62 + 5, **overrides), prompt="The capital")
        runs.append(Run.objects.get(pk=done["run_id"]))
    html = client.get(f"/compare/{runs[0].id},{runs[1].id}").content.decode()
    start = html.index('data-action="live-compare"')
    href = html[html.rindex('href="', 0, start) + 6 : html.index('"', html.rindex('href="', 0, start) + 6)]
    url = urlsplit(href.replace("&amp;", "&"))
    assert url.path == "/compare/live"
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert query["prompt"] == "The capital" and query["mode"] == "completion"
    assert query["seed"] == str(2**62 + 5) and query["max_tokens"] == "3" and query["columns"] == "2"
    assert query["c1.temperature"] == "0.2" and query["c2.temperature"] == "1.5"
    # Only what differs from the defaults: top_p 0.9 (the helpers' default) but not top_p 1.
    assert query["c1.top_p"] == "0.9" and "c2.top_p" not in query
    assert json.loads(query["c2.other"]) == {"repetition_penalty": 1.3}
    assert "c1.other" not in query
    # each column runs its run's model (these ran on the default model, which is named anyway)
    assert query["c1.model"] == query["c2.model"] == runs[0].model


def test_default_params_are_the_normalized_empty_request():
    defaults = default_params()
    assert defaults["temperature"] == 1 and defaults["top_p"] == 1 and defaults["seed"] is None
