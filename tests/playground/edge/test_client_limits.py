"""Per-client limits on their own, on a clock the test moves: concurrency and the token bucket."""

from __future__ import annotations

import pytest

from playground.edge.client_limits import ClientLimits


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_concurrent_requests_are_counted_across_connections_and_freed():
    limits = ClientLimits(max_active=2, rate=1000, burst=1000, clock=Clock())
    assert limits.admit("a") is None and limits.admit("a") is None
    refusal = limits.admit("a")
    assert refusal.code == "too_many_requests" and refusal.retry_after is None and "at most 2" in refusal.message
    assert limits.admit("b") is None  # another client is not held back
    limits.release("a")
    assert limits.admit("a") is None


def test_the_rate_allows_a_burst_then_says_when_to_retry():
    clock = Clock()
    limits = ClientLimits(max_active=100, rate=2, burst=3, clock=clock)
    for _ in range(3):
        assert limits.admit("a") is None
        limits.release("a")
    refusal = limits.admit("a")
    assert refusal.code == "rate_limited" and refusal.retry_after == pytest.approx(0.5)
    clock.now += 0.5
    assert limits.admit("a") is None


def test_sequential_requests_do_not_escape_the_rate():
    """A client whose requests end at once is still limited (its bucket is not forgotten while not full)."""
    clock = Clock()
    limits = ClientLimits(max_active=100, rate=1, burst=2, clock=clock)
    outcomes = []
    for _ in range(5):
        refusal = limits.admit("a")
        outcomes.append(refusal is None)
        if refusal is None:
            limits.release("a")
    assert outcomes == [True, True, False, False, False]


@pytest.mark.parametrize("args", [(0, 1, 1), (1, 0, 1), (1, 1, 0)])
def test_limits_must_be_positive(args):
    with pytest.raises(ValueError):
        ClientLimits(*args)
