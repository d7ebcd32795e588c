"""Text in and out of the model: prompt encoding, token display text and UTF-8-safe streaming.

The served tokenizer is the built ``tokenizer.json`` read by the ``tokenizers`` library. Every token
stands for a run of bytes, and a token may end in the middle of a UTF-8 character, so streaming
works on bytes and releases only complete characters. A piece is read the way its tokenizer writes
it: SmolLM2's is a byte-level BPE (GPT-2's byte → printable character table); Gemma's is
SentencePiece's (``▁`` for a space, ``<0xNN>`` for a byte of its byte fallback, other text as UTF-8).

Prompts (each model's own markup; ``inference.model_dir.document_start`` picks the start):
- completion: the model's document start followed by the text: Gemma's ``<bos>``; for SmolLM2
  ``<|endoftext|>``. SmolLM2 was pre-trained on documents
  separated by ``<|endoftext|>``, so it marks the start of a fresh document; without any leading
  special token the model is lost (greedy "The capital of France is" → " capitalised as it is…",
  against " Paris, the capital of…" with it). The tokenizer rebuilt from the GGUF would prepend
  ``<|im_start|>`` instead, which opens a chat turn; that is the chat template's job.
- chat: the conversation rendered by the model's own chat template (``inference.chat_template``),
  ending where the assistant's turn starts (or inside the assistant's last message, to continue it).
  A ``prompt`` with an optional ``system`` is the one-turn conversation.
"""

from __future__ import annotations

import codecs
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Literal

from tokenizers import Tokenizer, pre_tokenizers

from inference.chat_template import ChatPrompt, ChatTemplate
from inference.errors import ParamError
from inference.model_dir import SMOLLM_DOCUMENT_START
from inference.sampling.stages.grammar import GrammarVocabulary

Mode = Literal["completion", "chat"]
EncodeMode = Literal["completion", "chat", "plain"]  # plain: the text alone, nothing added

DOCUMENT_START = SMOLLM_DOCUMENT_START  # SmolLM2's; a codec is given its model's own


SENTENCEPIECE_SPACE = "▁"


def _sentencepiece_bytes(piece: str) -> bytes:
    """A SentencePiece piece's bytes: ``<0xNN>`` is byte NN (byte fallback), ``▁`` a space."""
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        try:
            return bytes([int(piece[3:5], 16)])
        except ValueError:
            pass
    return piece.replace(SENTENCEPIECE_SPACE, " ").encode("utf-8")


def _byte_level_bytes(piece: str) -> bytes:
    """A byte-level BPE piece's bytes (a piece outside the table, as an added token, is its UTF-8)."""
    table = _unicode_to_byte()
    return bytes(table[ch] for ch in piece) if all(ch in table for ch in piece) else piece.encode("utf-8")


@lru_cache(maxsize=1)
def _unicode_to_byte() -> dict[str, int]:
    """The inverse of byte-level BPE's byte → printable character table (GPT-2's scheme).

    Printable Latin-1 bytes stand for themselves; the other 68 bytes are shifted to code points
    from 256 upward, in byte order.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table: dict[str, int] = {chr(b): b for b in printable}
    shifted = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + shifted)] = b
            shifted += 1
    return table


class TokenTexts(list[str]):
    """Every token's own text, indexed by id (what DRY and the inspector read), and the same
    vocabulary compiled for the grammar stage, made on first use and kept (once per runtime)."""

    def __init__(self, texts: list[str], tokenizer: Tokenizer, eos_ids: frozenset[int]) -> None:
        super().__init__(texts)
        self._tokenizer = tokenizer
        self._eos_ids = eos_ids

    @cached_property
    def grammar_vocabulary(self) -> GrammarVocabulary:
        return GrammarVocabulary.from_tokenizer_json(self._tokenizer.to_str(), len(self), self._eos_ids)


class TextCodec:
    """Encodes prompts to ids and turns ids back into bytes and text."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        eos_ids: frozenset[int],
        chat_template: ChatTemplate | None = None,
        document_start: str = DOCUMENT_START,
        no_chat_reason: str = "this model has no chat template, so chat mode is not available",
    ) -> None:
        self._tokenizer = tokenizer
        self.eos_ids = eos_ids
        self.chat_template = chat_template  # None: the model has no chat template, so no chat mode
        self.document_start = document_start  # what completion mode feeds before the prompt
        self.no_chat_reason = no_chat_reason  # chat mode's refusal when there is no template
        self.vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
        self._special = {token.content for token in tokenizer.get_added_tokens_decoder().values() if token.special}
        byte_level = isinstance(tokenizer.pre_tokenizer, pre_tokenizers.ByteLevel)
        self._piece_bytes = _byte_level_bytes if byte_level else _sentencepiece_bytes
        self._bytes_cache: dict[int, bytes] = {}
        self._all_texts: TokenTexts | None = None

    @classmethod
    def from_file(cls, path: Path, eos_ids: frozenset[int], chat_template: ChatTemplate | None = None, **words: str) -> TextCodec:
        """``words``: ``document_start`` and ``no_chat_reason``, as the constructor takes them."""
        return cls(Tokenizer.from_file(str(path)), eos_ids, chat_template, **words)

    def encode(self, prompt: str, mode: EncodeMode, system: str | None = None, chat: ChatPrompt | None = None) -> list[int]:
        """The exact ids fed to the model for this prompt (``plain``: the text's own tokens only).
        In chat mode ``chat`` is the conversation; without it, ``prompt`` (and ``system``) is one turn."""
        if mode == "chat":
            text = self.chat_text(chat or ChatPrompt.single_turn(prompt, system))
        elif mode == "completion":
            text = self.document_start + prompt
        else:
            text = prompt
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def chat_text(self, chat: ChatPrompt) -> str:
        """The conversation as the model's chat template renders it."""
        if self.chat_template is None:
            raise ParamError("mode", self.no_chat_reason)
        return self.chat_template.render(chat)

    def token_id(self, token: str) -> int | None:
        return self._tokenizer.token_to_id(token)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for; a special token stands for its own markup text."""
        cached = self._bytes_cache.get(token_id)
        if cached is not None:
            return cached
        piece = self._tokenizer.id_to_token(token_id)
        if piece is None:
            raise ValueError(f"token id {token_id} is not in the vocabulary (0..{self.vocab_size - 1})")
        if piece in self._special:
            data = piece.encode("utf-8")
        else:
            data = self._piece_bytes(piece)
        self._bytes_cache[token_id] = data
        return data

    def token_text(self, token_id: int) -> str:
        """A token's own text; bytes that are not a whole UTF-8 character show as ``<0xNN>``."""
        data = self.token_bytes(token_id)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return _decode_with_byte_escapes(data)

    def token_texts(self) -> TokenTexts:
        """Every token's own text, indexed by id, with the grammar's vocabulary (computed once)."""
        if self._all_texts is None:
            texts = [self.token_text(i) for i in range(self.vocab_size)]
            self._all_texts = TokenTexts(texts, self._tokenizer, self.eos_ids)
        return self._all_texts

    def decode(self, ids: list[int]) -> str:
        """The text of a whole id sequence, as the streamed pieces concatenate to."""
        return b"".join(self.token_bytes(i) for i in ids).decode("utf-8", errors="replace")


def _decode_with_byte_escapes(data: bytes) -> str:
    out: list[str] = []
    i = 0
    while i < len(data):
        for width in (4, 3, 2, 1):
            chunk = data[i : i + width]
            try:
                out.append(chunk.decode("utf-8"))
                i += width
                break
            except UnicodeDecodeError:
                continue
        else:
            out.append(f"<0x{data[i]:02X}>")
            i += 1
    return "".join(out)


class Utf8Stream:
    """Turns a stream of token bytes into text pieces that never split a character.

    Bytes of an unfinished character wait for the next token; bytes that can never form a
    character become U+FFFD, exactly as ``bytes.decode("utf-8", errors="replace")`` would.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, data: bytes) -> str:
        return self._decoder.decode(data)

    def finish(self) -> str:
        return self._decoder.decode(b"", final=True)
