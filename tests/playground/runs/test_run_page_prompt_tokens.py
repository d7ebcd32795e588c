"""/r/<id> lists the prompt's tokens as the playground does: each chip its text with its id, and
the special ones marked — the tokenizer's markup (``<|endoftext|>``) and the run's own model's
named special tokens, read off that model's build (Gemma's ``<bos>``)."""

from __future__ import annotations

import json
import re

import pytest

from inference.model_catalog import is_special_token, special_token_texts
from tests.playground.runs.helpers import MODEL, events, record

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])

GEMMA = {**MODEL, "id": "gemma-3-270m", "name": "gemma-3-270m", "context_window": 32768}
GEMMA_SPECIALS = {"bos_token": "<bos>", "eos_tokens": ["<eos>", "<end_of_turn>"], "tokenizer_adds_bos": True}


def chips(html: str) -> list[tuple[str, str, str]]:
    """(class, title, text) of each prompt-token chip on the page."""
    listed = re.search(r'<ol class="prompt-tokens"[^>]*>(.*?)</ol>', html, re.S)
    assert listed, "the page has no prompt-token list"
    return re.findall(r'<li class="([^"]*)" title="([^"]*)">([^<]*)</li>', listed.group(1))


@pytest.fixture
def gemma_build(tmp_path, monkeypatch):
    """A Gemma model directory holding just its manifest's special tokens."""
    (tmp_path / "manifest.json").write_text(json.dumps({"special_tokens": GEMMA_SPECIALS}))
    monkeypatch.setenv("PLAYGROUND_MODEL_DIR_GEMMA_3_270M", str(tmp_path))


def test_the_chips_show_each_token_with_its_id_and_mark_the_markup(client):
    run_id = record(events())["run_id"]
    page = client.get(f"/r/{run_id}").content.decode()
    assert chips(page) == [("chip special", "id 0", "&lt;|endoftext|&gt;"), ("chip", "id 504", "The")]


def test_a_gemma_runs_bos_is_marked_special_from_its_build(client, gemma_build):
    evts = events()
    evts[0] = evts[0] | {"model": GEMMA, "prompt_tokens": [{"id": 2, "text": "<bos>"}, {"id": 818, "text": "The"}]}
    page = client.get(f"/r/{record(evts)['run_id']}").content.decode()
    assert chips(page) == [("chip special", "id 2", "&lt;bos&gt;"), ("chip", "id 818", "The")]


def test_named_special_tokens_come_from_the_build_and_only_for_that_model(gemma_build, tmp_path, monkeypatch):
    assert special_token_texts("gemma-3-270m") == {"<bos>", "<eos>", "<end_of_turn>"}
    monkeypatch.setenv("PLAYGROUND_MODEL_DIR_GEMMA_3_270M", str(tmp_path / "absent"))
    assert special_token_texts("gemma-3-270m") == frozenset()  # not built here: markup only
    assert special_token_texts("no-such-model") == frozenset()
    assert is_special_token("<|im_start|>", frozenset()) and not is_special_token("<bos>", frozenset())
    assert not is_special_token("<|a|b|>", frozenset()) and not is_special_token("x<|im_end|>", frozenset())
