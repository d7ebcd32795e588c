"""``python -m playground.server``: daphne, taking the same arguments, but a websocket that breaks
the protocol is closed with a close code and a reason instead of having its connection dropped.

Autobahn (daphne's websocket implementation) fails a connection by dropping TCP unless told
otherwise (its ``failByDrop`` option, on by default). With it off, a client frame over daphne's
``--websocket_max_message_size`` (1 MiB by default) closes the socket with 1009 (message too big),
and a text frame that is not valid UTF-8 with 1007 (invalid payload), each with a reason.
"""

from __future__ import annotations

from daphne.cli import CommandLineInterface
from daphne.server import Server


class PlaygroundServer(Server):
    def run(self) -> None:
        from twisted.internet import reactor

        reactor.callWhenRunning(self._close_with_a_reason)  # the factory exists once run() has begun
        super().run()

    def _close_with_a_reason(self) -> None:
        self.ws_factory.setProtocolOptions(failByDrop=False)


class PlaygroundCommandLine(CommandLineInterface):
    server_class = PlaygroundServer


if __name__ == "__main__":
    PlaygroundCommandLine.entrypoint()
