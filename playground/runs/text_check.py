"""Finding and repairing text that cannot be stored or shown.

A Python string may hold code points no UTF-8 encoder accepts: lone surrogates (U+D800–U+DFFF,
which a JSON escape such as ``"\\ud800"`` produces on its own). Saving one fails on SQLite's text
columns and PostgreSQL, and one that reached a JSON column (SQLite keeps it as the escape) makes
every page and export of its run fail. U+0000 is refused by PostgreSQL's text and jsonb, so a
run holding it could not move between the two. Both are "unencodable" here: the save path refuses
them (``playground.runs.models.Run.save``), requests that carry them are answered with a 400 naming
the field, and ``repaired`` replaces them with U+FFFD for runs saved before that check existed
(``manage.py repair_run_text``).
"""

from __future__ import annotations

import json
import re
from typing import Any

UNENCODABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def describe(text: str) -> str:
    """What is wrong with a string ``first_unencodable`` found."""
    match = UNENCODABLE.search(text)
    assert match is not None
    char = match.group()
    if char == "\x00":
        return f"contains U+0000 (NUL) at character {match.start()}, which cannot be stored"
    return (
        f"contains a lone surrogate U+{ord(char):04X} at character {match.start()} "
        "(half of a UTF-16 pair, not text), which cannot be stored or shown"
    )


def is_clean(value: Any) -> bool:
    """Whether every string in ``value`` (dict keys included, nested to any depth) is storable."""
    if isinstance(value, str):
        return UNENCODABLE.search(value) is None
    dumped = json.dumps(value, ensure_ascii=False, default=str)  # writes U+0000 as its escape
    return UNENCODABLE.search(dumped) is None and "\\u0000" not in dumped


def first_unencodable(value: Any, path: str = "") -> tuple[str, str] | None:
    """The path (``a.b[2].c``) of the first string in ``value`` that cannot be stored, and what is
    wrong with it; ``None`` when there is none. Walks without recursion: any depth is fine."""
    if is_clean(value):
        return None
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if UNENCODABLE.search(item):
                return where or "(value)", describe(item)
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                key_text = str(key)
                if UNENCODABLE.search(key_text):
                    return _join(where, _printable(key_text)), f"has a key that {describe(key_text)}"
                children.append((_join(where, key_text), child))
            stack.extend(reversed(children))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed([(f"{where}[{i}]", child) for i, child in enumerate(item)]))
    return None


def repaired(value: Any) -> Any:
    """``value`` with every unencodable character (in keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return UNENCODABLE.sub(REPLACEMENT, value)
    if isinstance(value, dict):
        return {repaired(k) if isinstance(k, str) else k: repaired(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [repaired(v) for v in value]
    return value


def excerpt(text: str, limit: int = 60) -> str:
    """A short, always printable quotation of a value a client sent, for error messages."""
    shown = text if len(text) <= limit else text[:limit] + "…"
    return repr(_printable(shown))


def _printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
