"""One run's request: what to generate and how, checked once, frozen, and carried as plain data.

``GenerationRequest.from_params`` reads a request from its fields as a client names them (the flat
``params`` object among them) and owns every rule: each value's range (the parts' own checks:
``SamplingParams``, the grammar among them, ``LoopParams``, ``SpeculativeParams``) and every rule
between values (``check_rules``). It answers a ``ParamError`` naming the field (``params.<name>``
inside ``params``), the one error value the websocket's ``error`` event and the HTTP API's error
body are both made from. What it returns is valid: ``to_json`` writes it for the channel layer, and
``from_json`` rebuilds it on the worker (the JSON values turned back into theirs, a malformed
message refused by field) without checking the sampler settings' ranges or the rules between
values again: the one check left on the worker is each sampler stage's of its own arguments. What
needs the model (token ids against the vocabulary, the prompt against the context window) is
checked by the worker, which has it (``check_token_ids``).

Seeds: a request without one gets one drawn when its run starts (``with_seed``), so every run can be
replayed; sample i runs with ``sample_seed(seed, i)``, its sampler settings made by
``sample_sampling`` without checking again what the request already holds.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from inference.chat_template import ChatMessage, ChatPrompt
from inference.decoding.loop_params import LoopParams, SpeculativeParams
from inference.decoding.origin import PrefixPlan
from inference.errors import ParamError, excerpt
from inference.sampling import SamplingParams
from inference.sampling.params import MAX_SEED
from inference.text import Mode

SEED_BITS = 62  # a drawn seed: seed + i stays below 2**63 for every sample, so no wrap is ever seen
SPECULATIVE = "speculative"  # the ``params`` key of a generation alone: neither the chain's nor the loop's
TOP_N = (1, 20)  # alternatives each token's trace carries
MAX_PREFIX_TOKENS = 8192
MAX_WATCH = 8  # tokens one run follows at every step (``watch``)
MAX_TOKEN_ID_DIGITS = 40  # a logit_bias key longer than this is not named in full (it is no token id anyway)
# The fields ``to_json`` writes and ``from_json`` needs.
WIRE_KEYS = (
    "prompt",
    "mode",
    "system",
    "params",
    "top_n",
    "use_cache",
    "prompt_scores",
    "prefix_tokens",
    "watch",
    "chat",
    "typed_tokens",
    "branched",
)


def sample_seed(seed: int, index: int) -> int:
    """Sample ``index``'s seed: seed + index, wrapped modulo 2^63 so it stays a valid seed."""
    return (seed + index) % (MAX_SEED + 1)


@dataclass(frozen=True)
class GenerationRequest:
    prompt: str
    mode: Mode = "completion"
    system: str | None = None
    sampling: SamplingParams = field(default_factory=SamplingParams)
    loop: LoopParams = field(default_factory=LoopParams)
    top_n: int = 5
    use_cache: bool = True
    prefix_tokens: tuple[int, ...] = ()  # forced as the first generated tokens (a branch's path)
    chat: ChatPrompt | None = None  # chat mode's conversation; None: ``prompt`` (and ``system``) is one turn
    _: KW_ONLY  # the options added since: by name only
    speculative: SpeculativeParams | None = None  # drafts verified in one pass; same output distribution
    prompt_scores: bool = (
        False  # keep the prefill's logits and report each prompt token's surprisal (``inference.decoding.surprisal``)
    )
    watch: tuple[int, ...] = ()  # token ids each step's trace follows wherever they rank (``StepTrace.watched``)
    # which prefix tokens the person chose (``inference.decoding.origin``): the last ``typed_tokens``
    # typed (edit and continue); with ``branched`` the one before them picked as a branch
    typed_tokens: int = 0
    branched: bool = False

    def __post_init__(self) -> None:
        check_rules(self)

    # -- from and to plain data -----------------------------------------------------------------

    @classmethod
    def from_params(cls, fields: Mapping[str, Any]) -> GenerationRequest:
        """A request from its fields as a client names them: ``prompt``, ``mode``, ``system`` and
        ``chat`` as the front door read them (their limits and the model's chat template are its
        own), and ``params`` (the flat object of the chain's and the loop's parameters, and
        ``speculative``), ``top_n``, ``use_cache``, ``prompt_scores``, ``prefix_tokens``, ``watch``,
        ``typed_tokens``, ``branched`` as sent. Every value and every rule between them is checked
        here, once; ``ParamError`` names the first field at fault."""
        top_n = int_in(fields, "top_n", 5, TOP_N)
        use_cache = boolean(fields, "use_cache", True)
        prompt_scores = boolean(fields, "prompt_scores", False)
        sampling_part, loop_part, speculative_part = _client_params(fields.get("params", {}), speculative=True)
        with _named("params"):  # the sampler settings straight to their checks, with only the chain's keys
            sampling, loop = SamplingParams(**sampling_part), LoopParams.from_dict(loop_part)
        with _named(f"params.{SPECULATIVE}"):
            speculative = SpeculativeParams.from_value(speculative_part)
        prefix = token_ids(fields.get("prefix_tokens", []), "prefix_tokens")
        watch = watched(fields.get("watch", []))
        typed = int_in(fields, "typed_tokens", 0, (0, len(prefix)), "the length of prefix_tokens")
        branched = boolean(fields, "branched", False)
        if branched and len(prefix) - typed < 1:
            raise ParamError("branched", "branched needs a prefix_tokens entry before the typed ones: the alternative picked")
        values = dict(
            prompt=fields["prompt"],
            mode=fields.get("mode", "completion"),
            system=fields.get("system"),
            sampling=sampling,
            loop=loop,
            top_n=top_n,
            use_cache=use_cache,
            prefix_tokens=prefix,
            chat=fields.get("chat"),
            prompt_scores=prompt_scores,
            watch=watch,
            speculative=speculative,
            typed_tokens=typed,
            branched=branched,
        )
        try:
            return cls(**values)
        except ParamError as error:  # a rule between parameters, all of them in ``params``
            raise error.prefixed("params.") from None

    def to_json(self) -> dict[str, Any]:
        """The request as plain data (every parameter with its value), as the channel layer carries it."""
        return {
            "prompt": self.prompt,
            "mode": self.mode,
            "system": self.system,
            "params": {**self.sampling.to_dict(), **self.loop.to_dict(), **self._speculative_dict()},
            "top_n": self.top_n,
            "use_cache": self.use_cache,
            "prompt_scores": self.prompt_scores,
            "prefix_tokens": list(self.prefix_tokens),
            "watch": list(self.watch),
            "chat": chat_to_json(self.chat),
            "typed_tokens": self.typed_tokens,
            "branched": self.branched,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GenerationRequest:
        """The request ``to_json`` wrote. The flat ``params`` are split by ``_partition`` and rebuilt:
        the sampler settings by ``SamplingParams.from_json`` (their shape checked, not their ranges:
        they held at the front door), the loop's and ``speculative`` by their constructors; the rules
        between values held when the request was made and are not checked again. A message without
        one of ``WIRE_KEYS`` is refused naming it."""
        missing = [key for key in WIRE_KEYS if key not in data]
        if missing:
            raise ParamError(missing[0], f"a carried request must have {missing[0]}; it has {sorted(data)}", "missing_field")
        sampling, loop, speculative = _partition(data["params"], speculative=True)
        values = {
            "prompt": data["prompt"],
            "mode": data["mode"],
            "system": data["system"],
            "sampling": SamplingParams.from_json(sampling),  # its shape checked, not its ranges again
            "loop": LoopParams.from_dict(loop),
            "top_n": data["top_n"],
            "use_cache": data["use_cache"],
            "prefix_tokens": tuple(data["prefix_tokens"]),
            "chat": chat_from_json(data["chat"]),
            "speculative": SpeculativeParams.from_value(speculative),  # null or absent: off
            "prompt_scores": data["prompt_scores"],
            "watch": tuple(data["watch"]),
            "typed_tokens": data["typed_tokens"],
            "branched": data["branched"],
        }
        request = object.__new__(cls)
        for name, value in values.items():
            object.__setattr__(request, name, value)  # frozen; ``__post_init__``'s rules held at the front door
        return request

    def params_dict(self) -> dict[str, Any]:
        """The flat ``params`` (``speculative`` only when set: the key is the generate frame's alone)."""
        return {**self.sampling.to_dict(), **self.loop.to_dict(), **self._speculative_dict()}

    def _speculative_dict(self) -> dict[str, Any]:
        return {} if self.speculative is None else {SPECULATIVE: self.speculative.to_dict()}

    # -- what a run reads --------------------------------------------------------------------------

    @property
    def prefix_plan(self) -> PrefixPlan:
        return PrefixPlan(len(self.prefix_tokens), self.typed_tokens, self.branched)

    def with_seed(self) -> GenerationRequest:
        """The same request with a seed: the client's, or one drawn now so the run can be replayed
        (nothing else is checked again: the request is valid)."""
        if self.sampling.seed is not None:
            return self
        return _copy(self, sampling=_copy(self.sampling, seed=secrets.randbits(SEED_BITS)))

    def sample_sampling(self, index: int) -> SamplingParams:
        """Sample ``index``'s sampler settings: the request's, seeded with ``sample_seed`` (a seeded request)."""
        if self.sampling.seed is None:
            raise ValueError("sample_sampling needs a seeded request (with_seed)")
        seed = sample_seed(self.sampling.seed, index)
        if seed == self.sampling.seed:
            return self.sampling
        return _copy(self.sampling, seed=seed)  # in range: sample_seed wraps it


def _copy(value: Any, **changes: Any) -> Any:
    """A frozen, already-checked value with some of its fields set to values that are valid too,
    without its checks run again (``dataclasses.replace`` would run them)."""
    copy = object.__new__(type(value))
    for f in dataclasses.fields(value):
        object.__setattr__(copy, f.name, changes.get(f.name, getattr(value, f.name)))
    return copy


def check_rules(request: GenerationRequest) -> None:
    """The rules between a request's values, every one of them (``ParamError`` naming the field)."""
    try:
        request.prefix_plan  # noqa: B018 (checks typed_tokens and branched against the prefix)
    except ValueError as error:
        raise ParamError("typed_tokens" if "typed" in str(error) else "branched", str(error)) from None
    loop, speculative = request.loop, request.speculative
    if speculative is not None and (loop.n > 1 or loop.num_beams > 1):
        field_name = "n" if loop.n > 1 else "num_beams"
        raise ParamError(SPECULATIVE, f"speculative decoding runs one sample: {field_name} must be 1 with it")
    if request.sampling.grammar is not None and loop.num_beams > 1:
        raise ParamError("num_beams", "num_beams must be 1 with a grammar: beam search does not run the sampler chain")
    if request.sampling.grammar is not None and loop.ignore_eos:
        raise ParamError("ignore_eos", "ignore_eos must be false with a grammar: the end of sequence is where it is complete")


# -- the flat ``params`` object ---------------------------------------------------------------------


def parse_params(params: Any) -> tuple[SamplingParams, LoopParams]:
    """The flat ``params`` object of the chain's and the loop's keys as a client sent it (an
    inspection's settings), split by the same rule; every error named under ``params.``."""
    sampling_part, loop_part, _ = _client_params(params, speculative=False)
    with _named("params"):
        return SamplingParams(**sampling_part), LoopParams.from_dict(loop_part)


def _client_params(params: Any, speculative: bool) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """A client's flat ``params`` split by ``_partition`` once its shape is checked: an object, no
    key that no part names, no ``logit_bias`` key too long to be a token id."""
    if not isinstance(params, dict):
        raise ParamError("params", "params must be an object")
    unknown = sorted(
        set(params) - SamplingParams.field_names() - LoopParams.field_names() - ({SPECULATIVE} if speculative else set())
    )
    if unknown:
        raise ParamError(f"params.{unknown[0]}", f"unknown parameter params.{excerpt(unknown[0])}", "unknown_param")
    _check_logit_bias_keys(params.get("logit_bias"))
    return _partition(params, speculative)


@contextmanager
def _named(field_name: str) -> Iterator[None]:
    """Errors raised inside, named for the client under ``params.``: a ``ParamError``'s field
    prefixed, any other ``TypeError`` or ``ValueError`` (a value of a shape no check foresaw) as
    ``field_name``'s."""
    try:
        yield
    except ParamError as error:
        raise error.prefixed("params.") from None
    except (TypeError, ValueError) as error:
        raise ParamError(field_name, f"{field_name}: {error}") from None


def split_params(params: Mapping[str, Any]) -> tuple[SamplingParams, LoopParams]:
    """A carried flat ``params`` object of the chain's and the loop's keys (an inspection's variant),
    split and rebuilt as ``GenerationRequest.from_json`` rebuilds a generation's."""
    sampling, loop, _ = _partition(params, speculative=False)
    return SamplingParams.from_json(sampling), LoopParams.from_dict(loop)


def _partition(params: Mapping[str, Any], speculative: bool) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """The one rule that splits the flat ``params`` object: a key the chain names is the chain's,
    ``speculative`` (where a generation may have it) is its own, and every other key goes to the
    stopping rules, whose own check refuses a key neither names (``ParamError``, code ``unknown_param``)."""
    sampling_keys = SamplingParams.field_names()
    own = {SPECULATIVE} if speculative else set()
    return (
        {k: v for k, v in params.items() if k in sampling_keys},
        {k: v for k, v in params.items() if k not in sampling_keys and k not in own},
        params.get(SPECULATIVE) if speculative else None,
    )


def _check_logit_bias_keys(bias: Any) -> None:
    """A key far too long to be a token id is refused before anything turns it into a number
    (Python's int() refuses beyond 4,300 digits; no vocabulary needs more than a few)."""
    if not isinstance(bias, dict):
        return  # the sampler's own check names what logit_bias must be
    for key in bias:
        if len(key) > MAX_TOKEN_ID_DIGITS:
            raise ParamError(
                "params.logit_bias",
                f"params.logit_bias keys must be token ids (integers from 0); got a key of {len(key)} characters",
            )


# -- one field each -----------------------------------------------------------------------------


def int_in(fields: Mapping[str, Any], name: str, default: int, bounds: tuple[int, int], high_words: str | None = None) -> int:
    """``fields[name]`` (``default`` when absent): an integer in ``bounds``; ``high_words`` names the high end."""
    value = fields.get(name, default)
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        upper = high if high_words is None else f"{high_words} ({high})"
        raise ParamError(name, f"{name} must be an integer from {low} to {upper}, got {excerpt(value)}")
    return value


def boolean(fields: Mapping[str, Any], name: str, default: bool) -> bool:
    value = fields.get(name, default)
    if not isinstance(value, bool):
        raise ParamError(name, f"{name} must be true or false, got {excerpt(value)}")
    return value


def token_ids(value: Any, name: str) -> tuple[int, ...]:
    """A list of at most ``MAX_PREFIX_TOKENS`` token ids (integers from 0; the vocabulary is the worker's to check)."""
    if not isinstance(value, list) or len(value) > MAX_PREFIX_TOKENS:
        raise ParamError(name, f"{name} must be a list of at most {MAX_PREFIX_TOKENS} token ids")
    for i, token in enumerate(value):
        if isinstance(token, bool) or not isinstance(token, int) or token < 0:
            raise ParamError(f"{name}.{i}", f"{name}.{i} must be a token id (an integer from 0), got {excerpt(token)}")
    return tuple(value)


def watched(value: Any) -> tuple[int, ...]:
    """``watch``: at most ``MAX_WATCH`` distinct token ids (the worker refuses one beyond the
    vocabulary, ``watch.<i>``, as it refuses a ``logit_bias`` key)."""
    if not isinstance(value, list) or len(value) > MAX_WATCH:
        raise ParamError("watch", f"watch must be a list of at most {MAX_WATCH} token ids")
    ids = token_ids(value, "watch")
    if len(set(ids)) != len(ids):
        raise ParamError("watch", "watch must not name a token id twice")
    return ids


def chat_to_json(chat: ChatPrompt | None) -> dict[str, Any] | None:
    return None if chat is None else {"messages": chat.to_list(), "continue_final_message": chat.continue_final_message}


def chat_from_json(data: Mapping[str, Any] | None) -> ChatPrompt | None:
    if data is None:
        return None
    messages = tuple(ChatMessage(m["role"], m["content"]) for m in data["messages"])
    return ChatPrompt(messages, data["continue_final_message"])


# -- against the model's vocabulary (on the worker) ------------------------------------------------


def check_token_ids(request: GenerationRequest, vocab_size: int) -> None:
    """Every token id a request names (its forced prefix, its watched tokens, its ``logit_bias`` keys) must be in the
    vocabulary: one check for sampling and beam search alike, though beam search reads no bias."""
    check_prefix(request.prefix_tokens, vocab_size)
    check_watch(request.watch, vocab_size)
    request.sampling.validate_for_vocab(vocab_size)


def check_watch(watch: tuple[int, ...], vocab_size: int) -> None:
    """Every watched token must be in the vocabulary (refused as ``logit_bias`` keys are)."""
    for i, token in enumerate(watch):
        if not 0 <= token < vocab_size:
            raise ParamError(f"watch.{i}", f"watch.{i} must be a token id from 0 to {vocab_size - 1}, got {token}")


def check_prefix(prefix: tuple[int, ...], vocab_size: int) -> None:
    """Every forced token must be in the vocabulary."""
    for i, token in enumerate(prefix):
        if not 0 <= token < vocab_size:
            raise ParamError(
                f"prefix_tokens.{i}", f"prefix_tokens.{i} must be a token id from 0 to {vocab_size - 1}, got {token}"
            )
