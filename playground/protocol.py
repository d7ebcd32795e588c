"""The websocket protocol (docs/websocket-api.md): client frames in, parsed once into typed jobs,
live in ``playground.frames``; server events out in ``playground.events``; the channel-layer
messages between the consumer and the workers in ``playground.channel_messages``.

This module names the frame parser's entry points for code outside the websocket path (the saved
runs' import and history pages check parameters with the same rules).
"""

from playground.frames import ProtocolError, parse_generate, parse_json, parse_params

__all__ = ["ProtocolError", "parse_generate", "parse_json", "parse_params"]
