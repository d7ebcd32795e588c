"""The switch-off rule's table: a run stops drafting once its verification passes made fewer
tokens than the plain steps their cost would have bought, and never before enough drafts."""

from __future__ import annotations

import pytest

from inference.speculative.switch_off import PASS_COST, SWITCH_OFF_AFTER, pass_cost, switch_off


def test_pass_cost_is_the_measured_table_between_its_sizes():
    assert [pass_cost(s) for s in sorted(PASS_COST)] == [PASS_COST[s] for s in sorted(PASS_COST)]
    assert pass_cost(4) == pytest.approx((PASS_COST[3] + PASS_COST[5]) / 2)
    assert pass_cost(7) == pytest.approx((PASS_COST[5] + PASS_COST[9]) / 2)


@pytest.mark.parametrize(
    ("drafted", "made", "cost", "off"),
    [
        (SWITCH_OFF_AFTER - 1, 2, 10.0, False),  # too few drafts judged to tell
        (SWITCH_OFF_AFTER, 5, 5.3, True),  # two passes of 4 drafts, 3 accepted: 5 tokens for 5.3 steps
        (SWITCH_OFF_AFTER, 6, 5.3, False),  # 4 accepted: the passes paid for themselves
        (40, 30, 30.0, False),
    ],
)
def test_the_rule(drafted, made, cost, off):
    assert switch_off(drafted, made, cost) is off
