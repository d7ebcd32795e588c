"""The loop-cost figure of ``python -m inference.bench`` on the tiny model (its values mean nothing there)."""

from __future__ import annotations

from inference.bench.loop_cost import loop_ms_per_token, timed_session

PROMPT = [0, 504, 3575, 282, 4649, 314]


def test_the_model_call_is_counted_and_the_session_left_as_it_was(tiny_runtime):
    session = tiny_runtime.decoder.session
    with timed_session(tiny_runtime) as clock:
        tiny_runtime.decoder.new_state().append_tokens(PROMPT)
        assert "run_with_iobinding" in vars(session)
    assert clock.wall > 0.0
    assert "run_with_iobinding" not in vars(session)  # the class's own method again


def test_the_loop_cost_is_reported_per_token_on_both_clocks(tiny_runtime):
    cost = loop_ms_per_token(tiny_runtime, 4)
    assert set(cost) == {"wall", "cpu"}
    assert cost["wall"] > 0.0
    assert "run_with_iobinding" not in vars(tiny_runtime.decoder.session)
