"""The close-cost figures (playground/loadtest/close_cost.py) on hand-made CPU readings, and its frames."""

from __future__ import annotations

from playground.loadtest.close_cost import CloseCost, _profile, _stopped_after, frames, summary

# (seconds after the close, CPU-seconds since): busy (0.05 CPU-s a 0.05 s sample) until 0.2 s, then a
# trickle below a quarter core (0.01 in a sample), then nothing
READINGS = [(0.0, 0.0), (0.05, 0.05), (0.1, 0.1), (0.15, 0.15), (0.2, 0.2), (0.25, 0.21), (0.5, 0.21), (2.0, 0.21)]


def test_the_compute_stopped_at_the_end_of_the_last_busy_sample() -> None:
    assert _stopped_after(READINGS) == 0.2
    assert _stopped_after([(0.0, 0.0), (0.05, 0.001), (0.1, 0.002)]) == 0.0  # never busy


def test_the_profile_slices_the_first_two_seconds() -> None:
    assert _profile(READINGS) == (0.21, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def test_the_summary_takes_median_and_max_of_each_figure() -> None:
    costs = [CloseCost(0.1 * i, 0.2 * i, 0.3 * i, 8, ()) for i in (1, 2, 4)]
    figures = summary(costs)
    assert figures["tries"] == 3 and figures["total"] == {"median": 0.4, "max": 0.8}
    assert figures["stopped_after_s"] == {"median": 0.6, "max": 1.2}


def test_a_try_sends_long_generations_the_last_two_drafting() -> None:
    sent = frames(8, "m")
    assert [frame["request_id"] for frame in sent] == [f"c{i}" for i in range(8)]
    assert all(frame["params"]["max_tokens"] == 2000 and frame["params"]["ignore_eos"] for frame in sent)
    assert ["speculative" in frame["params"] for frame in sent] == [False] * 6 + [True] * 2
