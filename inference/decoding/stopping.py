"""Stop strings matched on the decoded text across token boundaries."""

from __future__ import annotations


class StopStringMatcher:
    """Finds stop strings across token boundaries and holds back text that may start one.

    ``push`` returns the text that is safe to release and, when a stop string has appeared,
    which one. Text from the stop string on is never released.
    """

    def __init__(self, stops: tuple[str, ...]) -> None:
        self._stops = stops
        self._pending = ""

    def push(self, text: str) -> tuple[str, str | None]:
        self._pending += text
        if not self._stops:
            released, self._pending = self._pending, ""
            return released, None
        first: tuple[int, str] | None = None
        for stop in self._stops:
            at = self._pending.find(stop)
            if at >= 0 and (first is None or at < first[0]):
                first = (at, stop)
        if first is not None:
            released = self._pending[: first[0]]
            self._pending = ""
            return released, first[1]
        hold = self._longest_stop_prefix_suffix()
        cut = len(self._pending) - hold
        released, self._pending = self._pending[:cut], self._pending[cut:]
        return released, None

    def finish(self) -> str:
        """Releases what was held back when the run ends without a stop string."""
        released, self._pending = self._pending, ""
        return released

    def _longest_stop_prefix_suffix(self) -> int:
        best = 0
        for stop in self._stops:
            for length in range(min(len(stop) - 1, len(self._pending)), best, -1):
                if self._pending.endswith(stop[:length]):
                    best = length
                    break
        return best
