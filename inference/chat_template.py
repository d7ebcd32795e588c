"""Chat turns into prompt text with the model's own chat template, rendered in a Jinja sandbox.

The built model directory carries the template its source shipped (``chat_template.jinja``). It is
rendered the way Hugging Face tokenizers render it: ``trim_blocks`` and ``lstrip_blocks`` on, the
messages as ``[{"role", "content"}, ...]``, ``add_generation_prompt`` when the assistant's turn is
to be opened, the tokenizer's special tokens as ``bos_token``/``eos_token``, and
``raise_exception`` for templates that refuse a conversation. The environment is Jinja's
immutable sandbox: a template can read the values it is given, never change them or reach past them.

``continue_final_message``: the last message (the assistant's) is left open, so generation
continues its text instead of starting a new turn. The conversation is rendered in full and cut
right after the last message's content, which is how the template closes that turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from inference.errors import ParamError

ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class ChatMessage:
    role: str  # one of ROLES
    content: str


@dataclass(frozen=True)
class ChatPrompt:
    """A conversation to render: its turns, and whether the last (an assistant's) is continued."""

    messages: tuple[ChatMessage, ...]
    continue_final_message: bool = False

    def __post_init__(self) -> None:
        if not self.messages:
            raise ParamError("messages", "messages must hold at least one message")
        for i, message in enumerate(self.messages):
            if message.role not in ROLES:
                raise ParamError(f"messages.{i}.role", f"messages.{i}.role must be one of {', '.join(ROLES)}")
        if self.continue_final_message and self.messages[-1].role != "assistant":
            raise ParamError("continue_final_message", "continue_final_message needs the last message to be the assistant's")

    @classmethod
    def single_turn(cls, user_message: str, system: str | None = None) -> ChatPrompt:
        """One user message, after a system message when one is given (else the template's default)."""
        turns = [ChatMessage("user", user_message)]
        if system is not None:
            turns.insert(0, ChatMessage("system", system))
        return cls(tuple(turns))

    def to_list(self) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.content} for m in self.messages]


class ChatTemplateError(ParamError):
    """The template refused the conversation (``raise_exception``) or failed to render it."""


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


@lru_cache(maxsize=1)
def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = _raise_exception
    return env


class ChatTemplate:
    """One model's chat template, compiled once."""

    def __init__(self, source: str, special_tokens: dict[str, str] | None = None) -> None:
        self.source = source
        self._template = _environment().from_string(source)
        self._special = dict(special_tokens or {})

    @classmethod
    def from_file(cls, path: Path, special_tokens: dict[str, str] | None = None) -> ChatTemplate:
        return cls(path.read_text(encoding="utf-8"), special_tokens)

    def render(self, chat: ChatPrompt) -> str:
        """The prompt text for this conversation, ending where the model is to write."""
        context: dict[str, Any] = {
            **self._special,
            "messages": chat.to_list(),
            "add_generation_prompt": not chat.continue_final_message,
        }
        try:
            text = self._template.render(**context)
        except TemplateError as error:
            raise ChatTemplateError("messages", f"the model's chat template refused these messages: {error}") from None
        if chat.continue_final_message:
            final = chat.messages[-1].content
            end = text.rfind(final) if final else -1
            if end < 0:
                raise ChatTemplateError("messages", "the chat template does not show the last message's text as it is")
            text = text[: end + len(final)]
        return text
