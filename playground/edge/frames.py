"""Client frames in: the websocket's text frames parsed, once, into typed jobs (docs/websocket-api.md).

Parsing is strict: every field is checked, unknown keys are errors, text that is not valid Unicode
is refused wherever it is, and each error names the field and what it allows, quoting at most a
short excerpt of the bad value. The jobs are ``playground.wire.jobs``' types (named here too, for the
front doors that parse); how they cross the channel layer is ``playground.wire.channel_messages``'.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from inference.chat_template import ROLES, ChatMessage, ChatPrompt
from inference.decoding.request import MAX_WATCH, TOP_N, WIRE_KEYS, GenerationRequest, int_in, parse_params, token_ids
from inference.errors import FieldError, ParamError, excerpt
from inference.model_catalog import chat_refusal, resolve
from playground.edge import strict_json
from playground.edge.strict_json import parse_json
from playground.wire.events import TOKENIZE_PAGE, error_event
from playground.wire.jobs import Branch, Generate, Inspect, Job, Score, Tokenize

__all__ = [
    "MAX_WATCH",
    "TOP_N",
    "Branch",
    "Cancel",
    "Generate",
    "Inspect",
    "Job",
    "ProtocolError",
    "Score",
    "Tokenize",
    "excerpt",
]

REQUEST_ID = re.compile(r"^[A-Za-z0-9_\-.:]{1,64}$")
PROMPT_CHARACTERS = (1, 20_000)
# A generate frame: the request's own fields as the wire carries them (``chat`` is made from
# ``messages`` here, not sent), and the frame's.
GENERATE_KEYS = frozenset(WIRE_KEYS) - {"chat"} | {
    "type",
    "request_id",
    "parent_run",
    "branch_index",
    "messages",
    "continue_final_message",
    "save",
    "model",
}
MAX_MESSAGES = 64  # turns of one chat conversation
RUN_ID = re.compile(r"^[A-Za-z0-9_\-]{16,43}$")  # as playground.runs.ids.RUN_ID_PATTERN
CANCEL_KEYS = frozenset({"type", "request_id"})
TOKENIZE_KEYS = frozenset(
    {"type", "request_id", "text", "mode", "system", "offset", "limit", "messages", "continue_final_message", "model"}
)
INSPECT_KEYS = frozenset(
    {
        "type",
        "request_id",
        "prompt",
        "mode",
        "system",
        "prefix_tokens",
        "params",
        "variants",
        "top_n",
        "messages",
        "continue_final_message",
        "model",
    }
)
SCORE_KEYS = frozenset({"type", "request_id", "prompt", "mode", "system", "messages", "continue_final_message", "top_n", "model"})
MAX_VARIANTS = 8
INSPECT_TOP_N = (1, 50)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")  # as playground.runs.text_check: a lone surrogate, or NUL
# Every integer anywhere in a frame fits a signed 64-bit integer, whatever the frame type: what the
# channel layer carries (msgpack) and the database stores; no field's own range reaches past it.
FRAME_INTEGERS = (-(2**63), 2**63 - 1)


class ProtocolError(FieldError):
    """A client frame the server cannot act on; becomes an ``error`` event (with the request id
    when it was readable). The rules a frame's fields break raise the same field-naming error
    (``FieldError``: ``ParamError`` from ``GenerationRequest.from_params``); ``parse_client_message``
    gives it the request id, and the HTTP API answers it as it is (``openai_api.errors.from_field_error``)."""

    def __init__(self, param: str | None, message: str, code: str | None = None, request_id: str | None = None) -> None:
        super().__init__(param, message, code)
        self.request_id = request_id

    @classmethod
    def of(cls, error: FieldError, request_id: str | None) -> ProtocolError:
        return cls(error.param, error.message, error.code, request_id)

    def to_event(self) -> dict[str, Any]:
        return error_event(self.code, self.message, self.param, self.request_id)


@dataclass(frozen=True)
class Cancel:
    request_id: str


def parse_client_frame(text: str) -> Job | Cancel:
    try:
        message = parse_json(text)
    except ValueError as error:
        raise ProtocolError(None, f"the frame is not valid JSON: {error}", "invalid_json") from None
    if not isinstance(message, dict):
        raise ProtocolError(None, f"the frame must be a JSON object, got {type(message).__name__}", "invalid_json")
    return parse_client_message(message)


def parse_client_message(message: dict[str, Any], measured: bool = False) -> Job | Cancel:
    """A client frame already read as a JSON object (``measured``: its nesting already measured by
    ``strict_json``, as the HTTP API measures its body before it builds the frame). Every error is
    a ``ProtocolError`` naming the field, with the request id when it was readable: the rules'
    own field-naming error (``FieldError``, such as ``GenerationRequest.from_params``'s
    ``ParamError``) with the id added."""
    request_id = message.get("request_id")
    known_id = request_id if isinstance(request_id, str) and REQUEST_ID.match(request_id) else None
    kind = message.get("type")
    try:
        if not measured and (deep := strict_json.too_deep(message)) is not None:
            raise ProtocolError(deep or None, strict_json.message(deep), strict_json.CODE)
        _refuse_unencodable(message)
        if kind == "generate":
            return parse_generate(message, _request_id(message))
        if kind == "cancel":
            _reject_unknown(message, CANCEL_KEYS)
            return Cancel(_request_id(message))
        if kind == "tokenize":
            return parse_tokenize(_request_id(message), message)
        if kind == "inspect":
            return parse_inspect(_request_id(message), message)
        if kind == "score":
            return parse_score(_request_id(message), message)
    except FieldError as error:
        raise ProtocolError.of(error, known_id) from None
    raise ProtocolError(
        "type",
        f"type must be one of generate, cancel, tokenize, inspect, score; got {excerpt(kind)}",
        "unknown_type",
        request_id=known_id,
    )


def _refuse_unencodable(message: dict[str, Any]) -> None:
    """Text that cannot be encoded as UTF-8 (a lone surrogate such as the JSON escape ``\\ud800``)
    or stored (U+0000, which PostgreSQL refuses) is refused wherever it is, key or value, naming the field: nothing downstream could show,
    send or save it; so is an integer beyond ``FRAME_INTEGERS``, in every frame type alike, before
    any field's own range is checked. Walked without recursion, so no nesting depth can break it."""
    pending: list[tuple[str, Any]] = [("", message)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, int) and not isinstance(value, bool) and not FRAME_INTEGERS[0] <= value <= FRAME_INTEGERS[1]:
            raise ProtocolError(path, f"{path} must be an integer from -2^63 to 2^63 - 1, got {excerpt(value)}", "invalid_value")
        if isinstance(value, str):
            if _UNSTORABLE.search(value):
                raise ProtocolError(path, f"{path} {_what_is_wrong(value)}", "invalid_value")
        elif isinstance(value, dict):
            items = list(value.items())
            for key, _ in items:
                if _UNSTORABLE.search(key):
                    where = path or "the frame"
                    raise ProtocolError(path or None, f"a key of {where} {_what_is_wrong(key)}", "invalid_value")
            pending.extend((f"{path}.{key}" if path else key, item) for key, item in reversed(items))
        elif isinstance(value, list):
            pending.extend((f"{path}.{i}", item) for i, item in reversed(list(enumerate(value))))


def _what_is_wrong(text: str) -> str:
    if "\x00" in text and not re.search("[\ud800-\udfff]", text):
        return "contains U+0000 (NUL): text that cannot be stored"
    return "contains a lone surrogate: text that is not valid Unicode"


def parse_generate(message: Mapping[str, Any], request_id: str = "") -> Generate:
    """A ``generate`` frame as its job: the frame's own fields (the model, the text, the branch
    label, ``save``) read here, the request's by ``GenerationRequest.from_params``, each once (the
    prompt's length in tokens is checked later, by the worker that encodes it)."""
    _reject_unknown(message, GENERATE_KEYS)
    model = parse_model(message)
    prompt, mode, system, chat = _prompt_or_conversation(message, "prompt", model=model)
    request = GenerationRequest.from_params({**message, "prompt": prompt, "mode": mode, "system": system, "chat": chat})
    return Generate(request_id, request, parse_branch(message), parse_save(message), model=model)


def parse_messages(message: Mapping[str, Any]) -> ChatPrompt | None:
    """A chat ``generate``'s conversation: ``messages`` as ``[{role, content}, ...]`` (in place of
    ``prompt`` and ``system``), rendered by the model's chat template; ``continue_final_message``
    continues the last (assistant's) message instead of opening a new turn. None without ``messages``."""
    continued = message.get("continue_final_message", False)
    if not isinstance(continued, bool):
        raise ProtocolError("continue_final_message", "continue_final_message must be true or false", "invalid_value")
    if "messages" not in message:
        if continued:
            raise ProtocolError("continue_final_message", "continue_final_message needs messages", "invalid_value")
        return None
    for other in ("prompt", "text", "system"):
        if other in message:
            raise ProtocolError(other, f"{other} and messages do not go together: put every turn in messages", "invalid_value")
    if message.get("mode", "chat") != "chat":
        raise ProtocolError("mode", "messages are for chat mode", "invalid_value")
    turns = message["messages"]
    if not isinstance(turns, list) or not 1 <= len(turns) <= MAX_MESSAGES:
        raise ProtocolError("messages", f"messages must be a list of 1 to {MAX_MESSAGES} messages", "invalid_value")
    parsed = []
    total = 0
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise ProtocolError(f"messages.{i}", f"messages.{i} must be an object with role and content", "invalid_value")
        unknown = sorted(set(turn) - {"role", "content"})
        if unknown:
            raise ProtocolError(
                f"messages.{i}.{unknown[0]}", f"unknown field messages.{i}.{excerpt(unknown[0])}", "unknown_param"
            )
        role, content = turn.get("role"), turn.get("content")
        if role not in ROLES:
            raise ProtocolError(
                f"messages.{i}.role", f"messages.{i}.role must be one of {', '.join(ROLES)}; got {excerpt(role)}", "invalid_value"
            )
        if not isinstance(content, str):
            raise ProtocolError(f"messages.{i}.content", f"messages.{i}.content must be a string", "invalid_value")
        total += len(content)
        parsed.append(ChatMessage(role, content))
    if total > PROMPT_CHARACTERS[1]:
        raise ProtocolError(
            "messages", f"the messages' contents must be at most {PROMPT_CHARACTERS[1]} characters together", "invalid_value"
        )
    if continued and parsed[-1].role != "assistant":
        raise ProtocolError(
            "continue_final_message", "continue_final_message needs the last message to be the assistant's", "invalid_value"
        )
    return ChatPrompt(tuple(parsed), continued)


def parse_save(message: Mapping[str, Any]) -> bool:
    save = message.get("save", True)
    if not isinstance(save, bool):
        raise ProtocolError("save", f"save must be true or false, got {excerpt(save)}", "invalid_value")
    return save


def parse_branch(message: Mapping[str, Any]) -> Branch | None:
    """``parent_run`` and ``branch_index`` only label a branch for the saved run; checked here."""
    parent = message.get("parent_run")
    if parent is not None and (not isinstance(parent, str) or not RUN_ID.match(parent)):
        raise ProtocolError("parent_run", "parent_run must be a run id (16 to 43 URL-safe characters)", "invalid_value")
    index = message.get("branch_index")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
        raise ProtocolError("branch_index", f"branch_index must be an integer from 0, got {excerpt(index)}", "invalid_value")
    if (parent is None) != (index is None):
        field_name = "branch_index" if index is None else "parent_run"
        raise ProtocolError(field_name, "parent_run and branch_index go together", "missing_field")
    return None if parent is None else Branch(parent, index)


def parse_tokenize(request_id: str, message: Mapping[str, Any]) -> Tokenize:
    _reject_unknown(message, TOKENIZE_KEYS)
    model = parse_model(message)
    text, mode, system, chat = _prompt_or_conversation(
        message, "text", modes=("completion", "chat", "plain"), minimum=0, model=model
    )
    offset = int_in(message, "offset", 0, (0, PROMPT_CHARACTERS[1] * 4))  # a character is at most 4 byte tokens
    limit = int_in(message, "limit", TOKENIZE_PAGE[1], TOKENIZE_PAGE)
    return Tokenize(request_id, text, mode, system, offset, limit, chat, model=model)


def parse_inspect(request_id: str, message: Mapping[str, Any]) -> Inspect:
    _reject_unknown(message, INSPECT_KEYS)
    model = parse_model(message)
    prompt, mode, system, chat = _prompt_or_conversation(message, "prompt", model=model)
    base = message.get("params", {})
    if not isinstance(base, dict):
        raise ProtocolError("params", "params must be an object", "invalid_value")
    variants = message.get("variants", [{}])
    if not isinstance(variants, list) or not 1 <= len(variants) <= MAX_VARIANTS:
        raise ProtocolError("variants", f"variants must be a list of 1 to {MAX_VARIANTS} objects", "invalid_value")
    parsed = []
    for i, variant in enumerate(variants):
        if not isinstance(variant, dict):
            raise ProtocolError(f"variants.{i}", f"variants.{i} must be an object of parameters", "invalid_value")
        try:
            parsed.append(parse_params({**base, **variant}))
        except ParamError as error:
            parts = (error.param or "").split(".")
            if len(parts) > 1 and parts[0] == "params" and parts[1] in variant:
                error.param = f"variants.{i}." + error.param.removeprefix("params.")
            raise
    prefix = token_ids(message.get("prefix_tokens", []), "prefix_tokens")
    top_n = int_in(message, "top_n", 10, INSPECT_TOP_N)
    return Inspect(request_id, prompt, mode, system, prefix, tuple(parsed), top_n, chat, model=model)


def parse_score(request_id: str, message: Mapping[str, Any]) -> Score:
    _reject_unknown(message, SCORE_KEYS)
    model = parse_model(message)
    prompt, mode, system, chat = _prompt_or_conversation(message, "prompt", model=model)
    return Score(request_id, prompt, mode, system, int_in(message, "top_n", 5, TOP_N), chat, model=model)


def parse_model(message: Mapping[str, Any]) -> str:
    """The served model a frame names in ``model`` (its id or manifest name), the default one when
    absent; ``model_not_found`` naming the field for any other."""
    served = settings.INFERENCE["MODELS"]
    name = message.get("model")
    if name is None:
        return served[0]
    model = resolve(name, served) if isinstance(name, str) else None
    if model is None:
        raise ProtocolError(
            "model", f"model {excerpt(name)} is not served here; this server serves {', '.join(served)}", "model_not_found"
        )
    return model


def _prompt_or_conversation(
    message: Mapping[str, Any], field_name: str, model: str, **prompt_options: Any
) -> tuple[str, str, str | None, ChatPrompt | None]:
    """A frame's text, mode, system message and conversation: from ``messages`` when it has them
    (the text is then the last message, the mode chat), else from ``field_name`` as ``_prompt`` reads it.
    Chat mode for a model without a chat template is refused with the reason, naming the field."""
    chat = parse_messages(message)
    text, mode, system = (chat.messages[-1].content, "chat", None) if chat else _prompt(message, field_name, **prompt_options)
    if mode == "chat":
        refusal = chat_refusal(model, settings.INFERENCE["MODELS"])
        if refusal is not None:
            raise ProtocolError("messages" if chat else "mode", refusal, "invalid_value")
    return text, mode, system, chat


def _prompt(
    message: Mapping[str, Any], field_name: str, modes: tuple[str, ...] = ("completion", "chat"), minimum: int = 1
) -> tuple[str, str, str | None]:
    text = message.get(field_name)
    if text is None:
        raise ProtocolError(field_name, f"{field_name} is required", "missing_field")
    high = PROMPT_CHARACTERS[1]
    if not isinstance(text, str) or not minimum <= len(text) <= high:
        raise ProtocolError(field_name, f"{field_name} must be a string of {minimum} to {high} characters", "invalid_value")
    mode = message.get("mode", "completion")
    if mode not in modes:
        raise ProtocolError("mode", f"mode must be one of {', '.join(modes)}; got {excerpt(mode)}", "invalid_value")
    system = message.get("system")
    if system is not None and (mode != "chat" or not isinstance(system, str) or len(system) > high):
        raise ProtocolError("system", f"system must be a string of at most {high} characters, in chat mode only", "invalid_value")
    return text, mode, system


def _request_id(message: Mapping[str, Any]) -> str:
    request_id = message.get("request_id")
    if request_id is None:
        raise ProtocolError("request_id", "request_id is required", "missing_field")
    if not isinstance(request_id, str) or not REQUEST_ID.match(request_id):
        raise ProtocolError("request_id", "request_id must be 1 to 64 characters of A-Z a-z 0-9 _ - . :", "invalid_value")
    return request_id


def _reject_unknown(message: Mapping[str, Any], known: frozenset[str]) -> None:
    unknown = sorted(set(message) - known)
    if unknown:
        raise ProtocolError(unknown[0], f"unknown field {excerpt(unknown[0])}", "unknown_param")
