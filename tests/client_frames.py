"""Client frames as tests write them: one builder for every test that sends a ``generate``."""

from __future__ import annotations

from typing import Any


def generate(request_id: str | None = "r", prompt: str | None = "hi", **fields: Any) -> dict[str, Any]:
    """A ``generate`` frame; ``fields`` are its other keys (``params``, ``top_n``, ``mode``, ...).
    None leaves ``request_id`` or ``prompt`` out (a chat frame gives ``messages`` instead)."""
    frame: dict[str, Any] = {"type": "generate"}
    if request_id is not None:
        frame["request_id"] = request_id
    if prompt is not None:
        frame["prompt"] = prompt
    return frame | fields
