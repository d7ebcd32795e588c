"""A token's bytes are read the way its tokenizer writes its pieces: byte-level BPE (SmolLM2's) and
SentencePiece with byte fallback (Gemma's: ``▁`` is a space, ``<0xNN>`` a byte)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer, decoders, normalizers
from tokenizers.models import BPE

from inference.text import TextCodec

SMOLLM_TOKENIZER = Path(".models/smollm2-135m-instruct/tokenizer.json")


def sentencepiece_codec() -> TextCodec:
    """A small SentencePiece-style BPE, as Gemma's tokenizer.json is made (no pre-tokenizer)."""
    vocab = {"<pad>": 0, "<0xF0>": 1, "<0x9F>": 2, "<0x98>": 3, "<0x80>": 4, "▁": 5, "P": 6, "a": 7, "▁Paris": 8, "▁▁": 9}
    tokenizer = Tokenizer(BPE(vocab, [], byte_fallback=True))
    tokenizer.normalizer = normalizers.Replace(" ", "▁")
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    return TextCodec(tokenizer, frozenset())


def test_sentencepiece_pieces_are_spaces_and_fallback_bytes():
    codec = sentencepiece_codec()
    assert codec.token_bytes(8) == b" Paris"
    assert codec.token_bytes(9) == b"  "
    assert codec.token_text(8) == " Paris"
    assert codec.token_text(1) == "<0xF0>"  # one byte of a four-byte character, shown as its byte
    assert codec.decode([8, 1, 2, 3, 4]) == " Paris😀"
    assert codec.token_bytes(6) + codec.token_bytes(7) == b"Pa"


def test_the_streamed_pieces_join_to_what_the_tokenizer_decodes():
    codec = sentencepiece_codec()
    ids = [8, 5, 1, 2, 3, 4, 9, 6]
    assert codec.decode(ids) == codec._tokenizer.decode(ids)


@pytest.mark.skipif(not SMOLLM_TOKENIZER.exists(), reason="the SmolLM2 build is not in .models/")
def test_byte_level_pieces_still_read_through_gpt2s_table():
    codec = TextCodec.from_file(SMOLLM_TOKENIZER, frozenset())
    ids = codec.encode("The capital of  France 😀 is", "plain")
    assert codec.decode(ids) == "The capital of  France 😀 is"
    assert codec.token_text(ids[1]) == " capital"
