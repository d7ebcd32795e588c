"""The websocket protocol (docs/websocket-api.md): client frames in, parsed once into typed jobs
(``playground.wire.jobs``), live in ``playground.edge.frames``; server events out in ``playground.wire.events``;
the channel-layer messages between the front doors and the workers in ``playground.wire.channel_messages``.

This module names the frame parser's entry points for code outside the websocket path (the saved
runs' import and history pages check parameters with the same rules).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inference.decoding.generation import GenerationRequest
from playground.edge import frames
from playground.edge.frames import MAX_WATCH, ProtocolError, parse_json, parse_params

__all__ = ["MAX_WATCH", "ProtocolError", "parse_generate", "parse_json", "parse_params"]


def parse_generate(message: Mapping[str, Any]) -> GenerationRequest:
    """A ``generate`` frame's request, every field checked as the websocket checks it (the branch
    label and ``save`` included)."""
    return frames.parse_generate(message).request
