"""What the page tells a newcomer (static/playground/js/run-advice.js, run in Node): which prompts
read like instructions, which endings loop, and what a finished run's note says for each way a
run ends, on tables worked out by hand."""

from __future__ import annotations

import pytest

from tests.js import module_url, run_js

ADVICE = f"""
const advice = await import("{module_url("playground/js/run-advice.js")}");
console.log(JSON.stringify({{
  instruction: INPUT.prompts.map((text) => advice.looksLikeInstruction(text)),
  loops: INPUT.texts.map((text) => advice.repeatedEnding(text)),
  ends: INPUT.runs.map((run) => advice.endAdvice(run)),
}}));
"""

PROMPTS = {
    "Write a haiku about the sea.": True,
    "  translate to Spanish: Hello": True,
    "Please list three fruits": True,
    "Can you help me with my homework": True,
    "What is the capital of France?": True,
    "Is it raining?": True,
    "The capital of France is": False,
    "Once upon a time": False,
    "The question is why?": False,  # a question mark alone is not a question to the model
    "Writers often say": False,  # "writers" is not "write"
    "": False,
}

TEXTS = {
    "Your poem, Your poem, Your poem, Your poem,": "Your poem,",
    "a b c a b c a b c": "a b c",
    " no no no no": "no",
    "no no no": None,  # one word three times is still language ("no no no")
    " Paris, a city of light. Paris, a city of art.": None,
    "": None,
}


@pytest.fixture(scope="module")
def answers() -> dict:
    runs = [
        {"reason": "eos", "text": "", "tokens": 1},
        {"reason": "stop", "stopString": " ", "text": "", "tokens": 1},
        {"reason": "max_tokens", "text": " Paris is the capital", "tokens": 4, "maxTokens": 4},
        {"reason": "eos", "text": " Paris.", "tokens": 3},
        {"reason": "eos", "text": " Your poem, Your poem, Your poem,", "tokens": 9, "prompt": "Write a poem"},
        {"reason": "eos", "text": " The sea is blue.", "tokens": 6, "prompt": "Write a poem", "mode": "completion"},
        {"reason": "eos", "text": " The sea is blue.", "tokens": 6, "prompt": "Write a poem", "mode": "chat"},
        {"reason": "cancelled", "text": "", "tokens": 0},
    ]
    return run_js(ADVICE, {"prompts": list(PROMPTS), "texts": list(TEXTS), "runs": runs})


def test_instructions_are_told_from_text_to_continue(answers):
    assert dict(zip(PROMPTS, answers["instruction"], strict=True)) == PROMPTS


def test_loops_are_found_at_the_end_of_the_text(answers):
    assert dict(zip(TEXTS, answers["loops"], strict=True)) == TEXTS


def test_every_ending_says_why_and_odd_ones_what_to_try(answers):
    empty_eos, empty_stop, cut, fine, loop, instruction, chat, cancelled = answers["ends"]
    assert "end-of-sequence" in empty_eos["why"] and "Min tokens" in empty_eos["tryNext"]
    assert "(“ ”)" in empty_stop["why"] and "stop strings" in empty_stop["tryNext"]
    assert "(4)" in cut["why"] and "Raise Max tokens" in cut["tryNext"]
    assert fine["tryNext"] is None and fine["why"]
    assert "“Your poem,”" in loop["tryNext"] and "chat mode" in loop["tryNext"]
    assert "Chat mode answers it" in instruction["tryNext"]
    assert chat["tryNext"] is None  # chat mode answered the instruction: nothing odd
    assert "You stopped it" in cancelled["why"] and "Generate again" in cancelled["tryNext"]
