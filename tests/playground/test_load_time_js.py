"""A model's load as the page says it (static/shared/js/format.js, run in Node): the status while
a run waits for its model (`loading`), and the time to first token beside the load it waited for
(`done.timing.load_ms`), so the numbers add up to what the person waited (issue 30: Gemma's cold
first run took 3 s from click to first token while the page said 452 ms)."""

from __future__ import annotations

from tests.js import module_url, run_js

WORDS = f"""
const f = await import("{module_url("shared/js/format.js")}");
console.log(JSON.stringify({{
  first: INPUT.timings.map((t) => f.firstTokenWords(t)),
  loading: f.describeLoading(INPUT.loading),
}}));
"""


def test_the_load_is_said_while_it_lasts_and_beside_the_time_to_first_token() -> None:
    out = run_js(
        WORDS,
        {
            "timings": [
                {"time_to_first_token_ms": 452.4, "load_ms": 2548.0},
                {"time_to_first_token_ms": 452.4, "load_ms": None},
                {"time_to_first_token_ms": 41.2},  # a run saved before load_ms was said
                {"time_to_first_token_ms": None, "load_ms": 900.0},
            ],
            "loading": {"type": "loading", "request_id": "r", "model": "gemma-3-270m", "name": "Gemma 3 270M (base)"},
        },
    )
    assert out["first"] == ["452 ms (after 2.55 s loading the model)", "452 ms", "41 ms", "– (after 900 ms loading the model)"]
    assert out["loading"].startswith("Loading Gemma 3 270M (base)…")
