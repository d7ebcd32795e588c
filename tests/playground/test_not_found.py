"""Every address nothing answers gets the site's own 404 page, in every setting (issue 30, item 11):
bare /compare showed Django's debug page, which lists every route, because dev runs with DEBUG on.
The page says what was asked and where to go; /api/ addresses get a JSON error instead."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils.html import escape

from playground.views import NOT_FOUND_HINTS

pytestmark = pytest.mark.django_db

ADDRESSES = ["/compare", "/compare/", "/nothing-here", "/r/", "/tree", "/history/extra", "/static-ish/../x", "/%E2%9C%93"]


@pytest.fixture(params=[True, False], ids=["debug", "no-debug"])
def debug(request, settings) -> bool:
    settings.DEBUG = request.param  # dev runs with DEBUG on; the test runner turns it off
    return request.param


@pytest.mark.parametrize("address", ADDRESSES)
def test_an_unknown_address_gets_the_friendly_page_in_every_setting(debug, address):
    response = Client().get(address)
    assert response.status_code == 404
    html = response.content.decode()
    assert "Page not found" in html and 'data-testid="not-found"' in html
    assert "Using the URLconf" not in html and "urlpatterns" not in html  # Django's debug page
    assert 'class="site-nav"' in html  # the site's own frame, with its navigation
    assert 'href="/history"' in html and 'href="/compare/live"' in html
    assert response["Content-Security-Policy"]  # the one policy every page carries


def test_a_bare_comparison_address_says_how_one_is_made(debug):
    html = Client().get("/compare").content.decode()
    assert escape(NOT_FOUND_HINTS["compare"]) in html and "/compare/&lt;id&gt;,&lt;id&gt;" in html


def test_the_address_is_shown_escaped_and_short(debug):
    html = Client().get("/<script>" + "a" * 500).content.decode()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "a" * 201 not in html


def test_an_unknown_api_address_answers_json(debug):
    response = Client().post("/api/nothing", data="{}", content_type="application/json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_known_pages_and_their_own_404s_are_unchanged(debug):
    assert Client().get("/history").status_code == 200
    run_page = Client().get("/r/" + "A" * 22)  # a run id nobody saved: the runs app's own answer
    assert run_page.status_code == 404 and "no saved run has the id" in run_page.content.decode()
    assert Client().get("/v1/nothing").json()["error"]["code"]  # the API's 404 in OpenAI's shape
