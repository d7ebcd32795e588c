"""The page's origin words (static/shared/js/origin.js, run in Node) name the server's origins, no
more and no fewer, and read an event without one (a run saved before origins) as the server does
(``playground.wire.token_event.implied_origin``)."""

from __future__ import annotations

from inference.decoding.origin import Origin
from playground.wire.token_event import implied_origin
from tests.js import module_url, run_js
from tests.playground.token_fixtures import token_event

SCRIPT = f"""
const {{ ORIGINS, originOf, wasDrawn, chosenByPerson }} = await import("{module_url("shared/js/origin.js")}");
console.log(JSON.stringify({{
  names: Object.keys(ORIGINS),
  read: INPUT.map((t) => [originOf(t), wasDrawn(t), chosenByPerson(t)]),
}}));
"""

GRAMMAR_ONE = [{"name": "grammar", "kept": 1}, {"name": "temperature", "kept": 1}]
TOP_K_FIRST = [{"name": "top_k", "kept": 1}, {"name": "grammar", "kept": 1}]


def without_origin(**fields):
    event = token_event(**fields)
    del event["origin"]
    return event


def test_the_names_are_the_servers():
    assert run_js(SCRIPT, [])["names"] == [o.value for o in Origin]


def test_each_origin_reads_as_itself_and_only_a_sampled_token_was_drawn():
    events = [
        token_event(origin=o.value, forced=o.value in ("typed", "branch", "kept")) for o in Origin if o is not Origin.PROMPT
    ]
    read = run_js(SCRIPT, events)["read"]
    assert [r[0] for r in read] == [e["origin"] for e in events]
    assert [e["origin"] for e, r in zip(events, read) if r[1]] == ["sampled"]
    assert [e["origin"] for e, r in zip(events, read) if r[2]] == ["typed", "branch"]


def test_an_event_without_origin_reads_as_the_server_reads_it():
    events = [
        without_origin(),
        without_origin(draw=None, origin="greedy"),
        without_origin(forced=True),
        without_origin(drafted=True),
        without_origin(stages=GRAMMAR_ONE),
        without_origin(stages=TOP_K_FIRST),
    ]
    read = run_js(SCRIPT, events)["read"]
    assert [r[0] for r in read] == [implied_origin(e) for e in events]
    assert [r[0] for r in read] == ["sampled", "greedy", "kept", "draft", "forced_by_grammar", "sampled"]
