"""When the page keeps following the workers' load (static/playground/js/load-indicator.js, run in
Node): `isBusy` is true exactly while a stream decodes or a request waits, so polling stops only
on an idle answer (or none)."""

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
