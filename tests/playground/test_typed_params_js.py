"""The forms' typed parameters (static/shared/js/typed-params.js, run in Node), shared by the
batch view's lanes and the live comparison's columns: a number field's text goes out as a JSON
number only when it is one, and the JSON box's mistakes are named like the server's errors."""

from __future__ import annotations

from tests.js import module_url, run_js

TYPED = f"""
const typed = await import("{module_url("shared/js/typed-params.js")}");
const numbers = INPUT.numbers.map((text) => typed.numberOrText(text));
const boxes = INPUT.boxes.map((text) => {{
  try {{
    return {{ params: typed.paramsFromJsonBox(text, "other", '{{"min_p": 0.05}}', {{ seed: "has its own field above" }}) }};
  }} catch (error) {{
    return {{ error: {{ param: error.param, message: error.message, named: error instanceof typed.FieldError }} }};
  }}
}});
console.log(JSON.stringify({{ numbers, boxes }}));
"""


def test_numbers_and_json_boxes():
    result = run_js(
        TYPED,
        {
            "numbers": [" 0.7 ", "1e3", "", "abc", "Infinity", "0x10"],
            "boxes": ["", '  {"top_k": 40, "min_p": 0.1} ', "{top_k: 4}", "[1, 2]", "null", '{"seed": 3}'],
        },
    )
    # "Infinity" is not finite: it goes as text for the server to refuse by name; hex is a JSON-less number
    assert result["numbers"] == [0.7, 1000, "", "abc", "Infinity", 16]
    params, bad_json, array, null, taken = result["boxes"][1:]
    assert result["boxes"][0] == {"params": {}}
    assert params == {"params": {"top_k": 40, "min_p": 0.1}}
    assert bad_json["error"]["param"] == "other" and bad_json["error"]["message"].startswith("not valid JSON")
    for refused in (array, null):
        assert refused["error"] == {"param": "other", "message": 'must be a JSON object, like {"min_p": 0.05}', "named": True}
    assert taken["error"]["message"] == "seed has its own field above"
