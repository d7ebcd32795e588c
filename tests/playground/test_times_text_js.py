"""How many times likelier, readable at any size (static/shared/js/format.js, `timesText`, run in
Node): the temperature explorer's "Top ÷ second" row printed 31,000,231,646,288× at T = 0.1
(issue 30, item 11); past ten thousand it says the size in words, past a thousand trillion as a
power of ten."""

from __future__ import annotations

from tests.js import module_url, run_js

SCRIPT = f"""
const {{ timesText }} = await import("{module_url("shared/js/format.js")}");
console.log(JSON.stringify(INPUT.map((r) => timesText(r === null ? Infinity : r))));
"""

CASES = {
    1.0: "1.0×",
    3.456: "3.5×",
    340.4: "340×",
    4712.2: "4,712×",
    12_345: "12 thousand×",
    2_500_000: "2.5 million×",
    31_000_231_646_288: "31 trillion×",
    999_000_000_000_000: "999 trillion×",
    2.5e20: "10²⁰×",
    None: "∞",  # the second token has probability 0
}


def test_ratios_are_said_at_a_readable_size():
    assert run_js(SCRIPT, list(CASES)) == list(CASES.values())
    assert all(len(text) <= 14 for text in CASES.values())
