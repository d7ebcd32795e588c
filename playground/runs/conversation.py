"""A saved run's chat conversation: how it is stored, read back and summarized.

A run made from chat ``messages`` (several turns, or an assistant's answer to continue) keeps them
all, so a replay, "Open in playground" and an export send the same conversation again. Stored
compactly as ``[[role, content], …]`` (``Run.messages``); everywhere else (the export, the
``generate`` frame, the templates) a message is ``{"role", "content"}``. A run made from ``prompt``
(and ``system``) has no messages: ``Run.messages`` is null.

``Run.prompt`` of a conversation is its last user message (what history search and summaries
show): ``shown_prompt``. The export's ``request.prompt`` must equal it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def stored_messages(messages: Iterable[Mapping[str, str]]) -> list[list[str]]:
    """``[{role, content}, …]`` → the stored ``[[role, content], …]``."""
    return [[message["role"], message["content"]] for message in messages]


def messages_from_stored(rows: Sequence[Sequence[str]] | None) -> list[dict[str, str]] | None:
    """The stored ``[[role, content], …]`` → ``[{role, content}, …]``; None stays None."""
    return None if rows is None else [{"role": role, "content": content} for role, content in rows]


def shown_prompt(messages: Sequence[Mapping[str, str]]) -> str:
    """The text a conversation is listed and searched by: its last user message (the last
    message's text when no turn is the user's)."""
    for message in reversed(messages):
        if message["role"] == "user":
            return message["content"]
    return messages[-1]["content"] if messages else ""


def conversation_text(messages: Sequence[Mapping[str, str]] | None) -> str | None:
    """A conversation as one text (``role: content`` per message), for a table of differences."""
    return None if messages is None else "\n".join(f"{m['role']}: {m['content']}" for m in messages)


def page_fields(messages: Sequence[Mapping[str, str]], continue_final_message: bool) -> dict[str, Any]:
    """The playground page's view of a conversation: ``system`` (a first system message that is
    not blank, or None), ``turns`` (the earlier turns, ``[{role, content}, …]``), ``prompt`` (the last user
    message) and ``assistant_prefix`` (the continued answer's start, or ""). The page sends
    system + turns + prompt (+ prefix) back as the same messages, whenever the conversation ends
    with a user message before the continued answer (every conversation the page and the usual
    chat clients make); otherwise the last turns stay in ``turns`` and ``prompt`` is ""."""
    rest = list(messages)
    prefix = ""
    if continue_final_message and rest and rest[-1]["role"] == "assistant":
        prefix = rest.pop()["content"]
    system = None
    if rest and rest[0]["role"] == "system" and rest[0]["content"].strip() != "":
        system = rest.pop(0)["content"]  # a blank one stays a turn: the page leaves a blank box out
    prompt = ""
    if rest and rest[-1]["role"] == "user":
        prompt = rest.pop()["content"]
    turns = [{"role": m["role"], "content": m["content"]} for m in rest]
    return {"system": system, "turns": turns, "prompt": prompt, "assistant_prefix": prefix}
