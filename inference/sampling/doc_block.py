"""A generated block of a text file: the lines from a start marker to an end marker, both kept.
The start marker is found by its opening words only (its instructions may be reworded)."""

from __future__ import annotations

from pathlib import Path


def block_in(text: str, start: str, end: str) -> str:
    """The block ``text`` holds from the first line beginning ``start`` to ``end``, markers and the
    final newline included ("" when it has none)."""
    first = text.find(start)
    last = text.find(end, first)
    if first < 0 or last < 0:
        return ""
    return text[first : last + len(end)] + "\n"


def write_block(path: Path, start: str, end: str, block: str) -> bool:
    """Puts ``block`` in place of the block of the file at ``path``; True if the file changed."""
    text = path.read_text()
    old = block_in(text, start, end)
    if not old:
        raise SystemExit(f"{path}: no block between markers {start!r} ... {end!r}")
    new = text.replace(old, block)
    path.write_text(new)
    return new != text
