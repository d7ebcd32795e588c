"""Special tokens told by id (static/shared/js/format.js, run in Node): a model's ranges from
`GET /api/models` (`special_tokens.ids`) decide for its tokens, whatever they look like (Gemma's
<start_of_image> and <unused0> are special, a plain "<b>" is not); a token of a model whose ranges
are not known falls back to the look of the text (<|im_end|>)."""

from __future__ import annotations

from tests.js import module_url, run_js

SPECIAL = f"""
const f = await import("{module_url("shared/js/format.js")}");
f.knowSpecialIds("gemma-3-270m", [[0, 106], [255999, 262143]]);
f.knowSpecialIds("smollm2-135m-instruct", [[0, 16]]);
console.log(JSON.stringify(INPUT.map(([token, model]) => f.isSpecial(token, model))));
"""


def test_special_tokens_are_told_by_their_models_ids() -> None:
    cases = [
        [{"id": 255999, "token": "<start_of_image>"}, "gemma-3-270m"],
        [{"id": 6, "token": "<unused0>"}, "gemma-3-270m"],
        [{"id": 107, "token": "\n"}, "gemma-3-270m"],
        [{"id": 9681, "token": "<b>"}, "gemma-3-270m"],
        [{"id": 2, "token": "<|im_end|>"}, "smollm2-135m-instruct"],
        [{"id": 504, "token": "The"}, "smollm2-135m-instruct"],
        [{"id": 2, "token": "<|im_end|>"}, None],  # no model known: by the text's look
        [{"id": 255999, "token": "<start_of_image>"}, None],
        [{"id": 2, "token": "<|im_end|>"}, "a-model-not-listed"],
    ]
    assert run_js(SPECIAL, cases) == [True, True, False, False, True, False, True, False, True]
