"""A long prompt's surprisal travels in pages that each stay below the reply limit."""

from __future__ import annotations

import json

from inference.decoding.generation import GenerationRequest, run
from inference.decoding.loop_params import LoopParams
from playground.wire import events


def test_a_long_prompt_comes_in_pages_with_the_whole_prompts_summary(tiny_runtime):
    prompt = "the quick brown fox jumps over the lazy dog " * 40
    request = GenerationRequest(prompt, loop=LoopParams(max_tokens=1), top_n=20, prompt_scores=True)
    started = next(iter(run(tiny_runtime, request)))
    pages = events.prompt_surprisal_events("r", started.prompt_surprisal, tiny_runtime.codec)
    count = len(started.prompt_ids)
    assert count > events.PROMPT_SURPRISAL_PAGE and len(pages) == -(-count // events.PROMPT_SURPRISAL_PAGE)
    assert [p["offset"] for p in pages] == list(range(0, count, events.PROMPT_SURPRISAL_PAGE))
    assert [t["id"] for p in pages for t in p["tokens"]] == started.prompt_ids
    assert {(p["count"], p["total_bits"], p["perplexity"]) for p in pages} == {
        (count, started.prompt_surprisal.total_bits, started.prompt_surprisal.perplexity)
    }
    for page in pages:
        assert len(page["tokens"][-1]["alternatives"]) == 20
        assert events.encode_event(page) == json.dumps(page, ensure_ascii=False, allow_nan=False)  # sent as it is
