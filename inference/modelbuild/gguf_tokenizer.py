"""A ``tokenizer.json`` built from a GGUF's own SentencePiece vocabulary, as llama.cpp tokenizes it.

For ``tokenizer.ggml.model = "llama"`` (SentencePiece BPE: Gemma 3) the GGUF stores tokens, scores
and types but no merges. llama.cpp tokenizes such a vocabulary like this (``llm_tokenizer_spm``):

1. The text is split at every *user-defined* token (type 4: ``"\\n\\n"``, runs of spaces and tabs,
   ``<h1>``, …; the longest first) and, when special tokens are parsed, at every *control* token
   (type 3: ``<bos>``, ``<start_of_turn>``, …); those pieces become their tokens as they are.
2. In every other piece each space becomes ``▁`` (no space is put in front: ``add_space_prefix``
   is false), the piece is cut into characters, and the adjacent pair whose concatenation is a
   token with the highest score is merged, again and again (ties: leftmost).
3. A character that is no token becomes its UTF-8 bytes, ``<0x..>`` tokens (byte fallback).

``tokenizers``' BPE does the same with a merge list ordered by score: every way of cutting a token
into two tokens is a merge, ranked by the merged token's score (scores are ``-rank`` here). The
user-defined tokens become added tokens matched before normalization, the control tokens special
added tokens. transformers 4.57 gets this wrong without a word (it builds a Unigram model whose
scores are these ranks: "capital" becomes ``c ap it al``); this module does not use it.

Torch-free: ``gguf`` (the build extra) reads the file, ``tokenizers`` builds the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors

# llama.cpp's token types (gguf.TokenType).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
SPACE = "▁"


@dataclass(frozen=True)
class GgufVocab:
    """A GGUF's tokenizer fields: ``tokens[i]`` has score ``scores[i]`` and type ``types[i]``."""

    model: str
    tokens: list[str]
    scores: list[float]
    types: list[int]
    bos_id: int
    eos_id: int
    pad_id: int | None
    unk_id: int | None
    add_bos: bool
    add_space_prefix: bool


def read_vocab(gguf_path: Path) -> GgufVocab:
    """The tokenizer fields of the GGUF at ``gguf_path``."""
    from gguf import GGUFReader  # the build extra

    fields = GGUFReader(gguf_path).fields

    def value(key: str, default=None):
        field = fields.get(f"tokenizer.ggml.{key}")
        return default if field is None else field.contents()

    return GgufVocab(
        model=value("model"),
        tokens=list(value("tokens")),
        scores=[float(s) for s in value("scores")],
        types=[int(t) for t in value("token_type")],
        bos_id=int(value("bos_token_id")),
        eos_id=int(value("eos_token_id")),
        pad_id=value("padding_token_id"),
        unk_id=value("unknown_token_id"),
        add_bos=bool(value("add_bos_token", True)),
        add_space_prefix=bool(value("add_space_prefix", True)),
    )


def merges_by_score(vocab: GgufVocab) -> list[tuple[str, str]]:
    """Every cut of a normal (or byte) token into two tokens, best merged score first.

    Ties keep the merged token's id order, then the cut's position (leftmost first).
    """
    ids = {t: i for i, t in enumerate(vocab.tokens)}
    ranked: list[tuple[float, int, int, str, str]] = []
    for i, token in enumerate(vocab.tokens):
        if vocab.types[i] not in (NORMAL, BYTE):
            continue
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in ids and right in ids:
                ranked.append((-vocab.scores[i], i, cut, left, right))
    ranked.sort()
    return [(left, right) for *_, left, right in ranked]


def build_tokenizer(vocab: GgufVocab) -> Tokenizer:
    """The ``tokenizers.Tokenizer`` that tokenizes as llama.cpp does on ``vocab`` (SentencePiece BPE)."""
    if vocab.model != "llama":
        raise ValueError(f"tokenizer.ggml.model {vocab.model!r}: only SentencePiece BPE ('llama') is built here")
    if vocab.add_space_prefix:
        raise ValueError("add_space_prefix is set: a leading ▁ would be needed, which this builder does not add")
    unk = vocab.tokens[vocab.unk_id] if vocab.unk_id is not None else None
    model = models.BPE(
        vocab={t: i for i, t in enumerate(vocab.tokens)},
        merges=merges_by_score(vocab),
        unk_token=unk,
        byte_fallback=True,
        fuse_unk=True,
        dropout=None,
    )
    tokenizer = Tokenizer(model)
    tokenizer.normalizer = normalizers.Replace(" ", SPACE)
    tokenizer.pre_tokenizer = None  # the whole piece is one word, as for SentencePiece
    tokenizer.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()])
    # Ids are the vocabulary's already: an added token found in it keeps its id.
    of_type = lambda kind: [t for t, k in zip(vocab.tokens, vocab.types) if k == kind]  # noqa: E731
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in of_type(USER_DEFINED)])
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in of_type(CONTROL)])
    if vocab.add_bos:
        bos = vocab.tokens[vocab.bos_id]
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A $B", special_tokens=[(bos, vocab.bos_id)]
        )
    return tokenizer


def save_tokenizer(gguf_path: Path, dest: Path) -> Path:
    """``dest/tokenizer.json`` built from the GGUF at ``gguf_path``; returns its path."""
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "tokenizer.json"
    build_tokenizer(read_vocab(gguf_path)).save(str(path))
    return path
