"""When the page keeps following the workers' load (static/playground/js/load-indicator.js, run in
Node): `isBusy` is true exactly while a stream decodes or a request waits, so polling stops only
on an idle answer (or none); an answer says when it was true (`age_ms`) and which of the page's own
run events it already knows of."""

from __future__ import annotations

from tests.js import module_url, run_js

BUSY = f"""
const {{ isBusy }} = await import("{module_url("playground/js/load-indicator.js")}");
console.log(JSON.stringify(INPUT.map((load) => isBusy(load))));
"""


def total(running: int, rows: int, waiting: int) -> dict:
    return {"available": True, "total": {"running": running, "rows": rows, "waiting": waiting, "max_batch": 8}, "workers": []}


def test_busy_while_a_stream_decodes_or_a_request_waits():
    loads = [
        total(1, 1, 0),
        total(0, 0, 1),
        total(0, 1, 1),  # the line the issue saw left on screen: a request was still waiting
        total(0, 0, 0),
        {"available": False, "reason": "the workers do not report their load", "workers": []},
        None,
    ]
    assert run_js(BUSY, loads) == [True, True, True, False, False, False]


TIMES = f"""
const {{ answerTime, knownEvent, describeLoad }} = await import("{module_url("playground/js/load-indicator.js")}");
console.log(JSON.stringify({{
  times: INPUT.answers.map(([load, arrived]) => answerTime(load, arrived)),
  known: INPUT.at.map((at) => knownEvent(INPUT.events, at)),
  words: describeLoad(INPUT.answers[0][0], null),
}}));
"""


def test_an_answer_says_when_it_was_true_and_which_of_the_runs_events_it_knows() -> None:
    """The line is current or says how old it is (issue 30): an answer was true `age_ms` before it
    arrived; it knows of the page's own run events that came before that moment, not of later ones
    (a cached answer gathered before `done` does not count as after it)."""
    fresh = total(0, 0, 0) | {"age_ms": 12.5}
    cached = total(1, 1, 1) | {"age_ms": 900.0}
    older_server = total(1, 1, 0)  # no age_ms: taken as true when it arrived
    out = run_js(
        TIMES,
        {
            "answers": [[fresh, 10_000], [cached, 10_000], [older_server, 10_000]],
            "events": [{"type": "started", "at": 8_000}, {"type": "done", "at": 9_500}],
            "at": [7_999, 8_000, 9_100, 9_987.5, 10_000],
        },
    )
    assert out["times"] == [9_987.5, 9_100, 10_000]
    assert out["known"] == [None, "started", "started", "done", "done"]
    assert out["words"] == "Worker load: 0 streams decoding (0 of 8 batch rows in use), 0 waiting."
