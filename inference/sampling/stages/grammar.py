"""Constrained decoding: the ``grammar`` stage removes every token a JSON Schema, a regular
expression or a list of choices forbids at this point of the text.

The constraint is compiled by llguidance (docs/sampling.md says why this library): its matcher
walks the grammar byte by byte and gives, per step, a bitmask over the whole vocabulary. The
end-of-sequence tokens are in the mask only where the constraint is complete, so a run ends by
``eos`` with text that matches; once nothing but the end may follow, the mask holds the end alone.

Three parts, one job each: ``GRAMMAR`` (the field: checks ``{"type": ...}`` and compiles it,
refusing a bad schema or pattern by its place, ``grammar.schema``); ``GrammarVocabulary`` (the
model's vocabulary as llguidance reads it, made once per runtime); ``Grammar`` (the stage: one
matcher per run, advanced by ``accept`` with every chosen token, forced ones included).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import llguidance
import numpy as np

from inference.errors import ParamError
from inference.sampling.candidates import Candidates
from inference.sampling.stages.base import Stage, StepContext
from inference.sampling.stages.declaration import Declaration, ParamIs
from inference.sampling.stages.fields import Field

if TYPE_CHECKING:  # (for type hints only: params.py reads the declarations)
    from inference.sampling.params import SamplingParams

SOURCE_KEY = {"json_schema": "schema", "regex": "pattern", "choice": "options"}  # each type's one other key
KINDS = tuple(SOURCE_KEY)
MAX_SOURCE_CHARS = 100_000  # a schema, pattern or option list longer than this is refused
MAX_OPTIONS = 1_000
# JSON as people write it, one space after ':' and ',' and no other whitespace, so a model cannot
# spend its tokens on blank space (a schema's own "x-guidance" options override these).
JSON_LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


@dataclass(frozen=True)
class GrammarSpec:
    """A checked constraint: its ``kind``, what the user sent (``source``, JSON-ready) and the
    llguidance grammar compiled from it. Hashable: the source is kept as JSON text, in its own key order
    (a schema's property order is the order the object is written in)."""

    kind: str
    source_json: str
    compiled: str = field(compare=False, repr=False)  # made from the two above

    @property
    def source(self) -> Any:
        return json.loads(self.source_json)

    def to_json(self) -> dict[str, Any]:
        key = SOURCE_KEY[self.kind]
        return {"type": self.kind, key: self.source}


def _refuse(param: str, message: str) -> None:
    raise ParamError(param, message)


def _compile(kind: str, source: Any) -> str:
    """The llguidance grammar for a checked source; ``ParamError`` naming what is wrong."""
    where = "grammar." + SOURCE_KEY[kind]
    try:
        if kind == "json_schema":
            grammar = llguidance.LLMatcher.grammar_from_json_schema(source, defaults=JSON_LAYOUT)
        elif kind == "regex":
            grammar = llguidance.LLMatcher.grammar_from_regex(source)
        else:
            grammar = llguidance.grammar_from("choice", json.dumps(source))
    except ValueError as refused:  # (e.g. the schema ``true``: no object to apply the JSON layout to)
        _refuse(where, f"{where} is not a usable {kind.replace('_', ' ')}: {_first_line(str(refused))}")
    error = llguidance.LLMatcher.validate_grammar(grammar)
    if error:
        _refuse(where, f"{where} is not a usable {kind.replace('_', ' ')}: {_first_line(error)}")
    return grammar


def _first_line(error: str) -> str:
    """llguidance's message in one line: its first three lines, without the excerpt of the source
    (the caret line and the numbered ones)."""
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("^", "|")) and not line[:1].isdigit()]
    return "; ".join(useful[:3]) or error.strip()


@dataclass(frozen=True)
class GrammarField(Field):
    """``{"type": "json_schema", "schema": {...}}``, ``{"type": "regex", "pattern": "..."}`` or
    ``{"type": "choice", "options": ["...", ...]}``; stored as a compiled ``GrammarSpec``."""

    def _check(self, value: Any) -> GrammarSpec:
        if isinstance(value, GrammarSpec):
            return value
        if not isinstance(value, dict):
            _refuse("grammar", f"grammar must be an object with a type in {list(KINDS)}, or null (off)")
        kind = value.get("type")
        if kind not in KINDS:
            _refuse("grammar.type", f"grammar.type must be one of {list(KINDS)}; got {kind!r}")
        key = SOURCE_KEY[kind]
        extra = sorted(set(value) - {"type", key})
        if extra:
            _refuse(f"grammar.{extra[0]}", f"grammar of type {kind!r} takes only 'type' and {key!r}; got {extra[0]!r}")
        if key not in value:
            raise ParamError(f"grammar.{key}", f"grammar of type {kind!r} needs {key!r}", code="missing_field")
        source = value[key]
        if kind == "json_schema" and not isinstance(source, (dict, bool)):
            _refuse("grammar.schema", "grammar.schema must be a JSON Schema object")
        if kind == "regex" and (not isinstance(source, str) or not source):
            _refuse("grammar.pattern", "grammar.pattern must be a non-empty string (a regular expression)")
        if kind == "choice":
            if not isinstance(source, (list, tuple)) or not 1 <= len(source) <= MAX_OPTIONS:
                _refuse("grammar.options", f"grammar.options must be a list of 1 to {MAX_OPTIONS} strings")
            for i, option in enumerate(source):
                if not isinstance(option, str) or not option:
                    _refuse(f"grammar.options[{i}]", f"grammar.options[{i}] must be a non-empty string; got {option!r}")
            source = list(source)
        try:
            source_json = json.dumps(source, ensure_ascii=False)  # (key order kept: it is the order JSON is written in)
        except (TypeError, ValueError) as error:
            _refuse(f"grammar.{key}", f"grammar.{key} must be plain JSON data: {error}")
        if len(source_json) > MAX_SOURCE_CHARS:
            _refuse(f"grammar.{key}", f"grammar.{key} must be at most {MAX_SOURCE_CHARS} characters as JSON")
        return GrammarSpec(kind, source_json, _compile(kind, json.loads(source_json)))

    plain: ClassVar[bool] = False  # stored compiled

    def dump(self, value: GrammarSpec | None) -> dict[str, Any] | None:
        return None if value is None else value.to_json()

    def load(self, value: Any) -> GrammarSpec:
        """Compiled again from its source (what rebuilding it takes; the check comes with it)."""
        return self._check(value)

    def facts(self) -> dict[str, Any]:
        return {"kind": "grammar", "types": dict(SOURCE_KEY), "max_options": MAX_OPTIONS}

    def range_words(self) -> str:
        return " or ".join(f'`{{"type": "{kind}", …}}`' for kind in SOURCE_KEY)


GRAMMAR = GrammarField(
    "grammar",
    None,
    "null = off",
    nullable=True,
    label="Grammar",
    about="Only tokens that keep the text a match for a JSON Schema, a regular expression or a list of choices; the end only where it is complete.",
    definition='constrained decoding: removes every token the JSON Schema (`schema`), regular expression (`pattern`) or list of strings (`options`) forbids after the text so far; the end of sequence only where the text is complete. See "Constrained decoding" below.',
)


class GrammarVocabulary:
    """The model's vocabulary as llguidance reads it (an ``LLTokenizer``): built once per runtime
    (about 0.3 s for 49k tokens) and shared by every run's matcher."""

    def __init__(self, tokenizer: llguidance.LLTokenizer) -> None:
        self.tokenizer = tokenizer
        self.vocab_size: int = tokenizer.vocab_size
        self.eos_ids: tuple[int, ...] = tuple(tokenizer.eos_tokens)

    @classmethod
    def from_tokenizer_json(cls, text: str, vocab_size: int, eos_ids: Sequence[int]) -> GrammarVocabulary:
        """From a ``tokenizers`` ``tokenizer.json``. Its decoder is set to plain ``ByteLevel``:
        SmolLM2's lists ``ByteFallback`` first, which llguidance would obey, reading ``Ġ`` as
        U+0120 instead of a space (tests guard it)."""
        data = json.loads(text)
        if _is_byte_level(data.get("decoder")):
            data["decoder"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
        return cls(llguidance.LLTokenizer(json.dumps(data), n_vocab=vocab_size, eos_token=sorted(eos_ids)))

    @classmethod
    def from_token_bytes(cls, tokens: Sequence[bytes], eos_ids: Sequence[int]) -> GrammarVocabulary:
        """From every token's bytes, indexed by id (a small hand-made vocabulary); the
        end-of-sequence tokens are special (never text). Text is split greedily, longest first."""
        return cls(llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokens(tokens, eos_ids))))


def _is_byte_level(decoder: Any) -> bool:
    if not isinstance(decoder, dict):
        return False
    if decoder.get("type") == "ByteLevel":
        return True
    return any(_is_byte_level(d) for d in decoder.get("decoders", ()))


class _ByteTokens:
    """The small tokenizer interface ``llguidance.TokenizerWrapper`` reads, over a bytes list."""

    def __init__(self, tokens: Sequence[bytes], eos_ids: Sequence[int]) -> None:
        eos = sorted(eos_ids)
        self.eos_token_id = eos[0]
        self.bos_token_id = None
        self.special_token_ids = eos
        self.tokens = [b"\xff" + t if i in eos else t for i, t in enumerate(tokens)]  # llguidance marks specials so
        self._by_bytes = {t: i for i, t in enumerate(tokens) if i not in eos}
        self._longest = max(len(t) for t in self._by_bytes)

    def __call__(self, text: str | bytes) -> list[int]:
        data = text.encode() if isinstance(text, str) else text
        out: list[int] = []
        at = 0
        while at < len(data):
            for width in range(min(self._longest, len(data) - at), 0, -1):
                token = self._by_bytes.get(data[at : at + width])
                if token is not None:
                    out.append(token)
                    at += width
                    break
            else:
                raise ValueError(f"no token covers byte {data[at]:#x}")
        return out


class Grammar(Stage):
    """Keep the tokens the constraint allows after the text so far (end-of-sequence only where it is
    complete). Its state is the matcher, advanced by ``accept``; ``complete`` says whether the text
    so far satisfies the constraint."""

    name = "grammar"

    def __init__(self, spec: Any, vocabulary: GrammarVocabulary) -> None:
        self.spec: GrammarSpec = GRAMMAR.check(spec)
        self._vocabulary = vocabulary
        self._matcher = llguidance.LLMatcher(vocabulary.tokenizer, self.spec.compiled, log_level=0)
        self._check_matcher("grammar")
        self._mask: np.ndarray | None = None  # bool [V], the allowed tokens at this point (computed once per step)

    @property
    def complete(self) -> bool:
        """The text so far satisfies the constraint (an end-of-sequence token may follow)."""
        return self._matcher.is_accepting()

    def allowed(self) -> np.ndarray:
        """bool [V]: the tokens the constraint allows next."""
        if self._mask is None:
            bits = np.frombuffer(self._matcher.compute_bitmask(), dtype=np.uint8)
            self._check_matcher("grammar")
            mask = np.unpackbits(bits, bitorder="little")[: self._vocabulary.vocab_size].astype(bool)
            mask.flags.writeable = False
            self._mask = mask
        return self._mask

    def apply(self, cand: Candidates, ctx: StepContext) -> Candidates:
        allowed = self.allowed()
        if cand.vocab_size > len(allowed):  # the model's rows may be wider than the tokenizer
            allowed = np.concatenate([allowed, np.zeros(cand.vocab_size - len(allowed), dtype=bool)])
        keep = allowed[cand.ids]
        if not keep.any():
            raise ParamError(
                "grammar",
                "no token the grammar allows is left at this step: a stage before it in sampler_order, "
                "min_tokens (which rules out the end of sequence) or the model removed them all",
            )
        return cand.keep(keep)

    def accept(self, token: int, out: Candidates) -> None:
        self._matcher.consume_token(int(token))
        self._mask = None
        self._check_matcher("prefix_tokens")

    def refused_at(self, tokens: Sequence[int]) -> int | None:
        """Where the constraint, from where it stands now, first refuses one of ``tokens`` (their
        index), or None when it allows them all; its state is not changed."""
        allowed = self._matcher.validate_tokens([int(t) for t in tokens])
        return None if allowed >= len(tokens) else allowed

    def reset(self) -> None:
        self._matcher.reset()
        self._mask = None

    def follow(self, tokens: Sequence[int]) -> None:
        self._matcher.consume_tokens([int(t) for t in tokens])
        self._mask = None
        self._check_matcher("prefix_tokens")

    def _check_matcher(self, param: str) -> None:
        if not self._matcher.is_error():
            return
        if param == "prefix_tokens":  # a forced token: the library's message names its parser's internals, not shown
            raise ParamError(param, "the grammar does not allow a token that was forced here")
        raise ParamError(param, f"the grammar refused a token: {_first_line(self._matcher.get_error())}")


def _grammar(p: SamplingParams, token_texts: Sequence[str] | None) -> Grammar:
    """The stage for ``p``, on the vocabulary ``token_texts`` carries (``inference.text.TokenTexts``)."""
    vocabulary = getattr(token_texts, "grammar_vocabulary", None)
    if vocabulary is None:
        raise ParamError("grammar", "grammar needs the model's vocabulary; this chain was built without it")
    return Grammar(p.grammar, vocabulary)


GRAMMAR_STAGE = Declaration(
    Grammar,
    "remove every token the JSON Schema / regex / choice forbids here",
    params=(GRAMMAR,),
    on=(ParamIs("grammar", "nonempty"),),
    builder=_grammar,
    title="Grammar (constrained decoding)",
    group=None,
)
