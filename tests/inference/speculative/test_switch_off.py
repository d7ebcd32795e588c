"""The switch-off rule's table: a run stops drafting once its verification passes made fewer
tokens than the plain steps their cost would have bought, and never before enough drafts."""

from __future__ import annotations

import pytest

from inference.speculative.switch_off import DRAFT_TOKEN_COST, PASS_COST, SWITCH_OFF_AFTER, draft_cost, pass_cost, switch_off


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


def test_drafting_costs_nothing_by_lookup_and_a_draft_models_steps_otherwise():
    assert draft_cost("prompt_lookup", 8) == 0.0
    assert draft_cost("fast", 4) == pytest.approx(4 * DRAFT_TOKEN_COST["fast"])
    assert draft_cost("a model nobody measured", 4) == 4.0  # as dear as the target's own step


@pytest.mark.parametrize(("draft", "off"), [("prompt_lookup", False), ("fast", True)])
def test_two_full_passes_all_accepted_pay_for_lookup_but_not_for_the_draft_model(draft, off):
    passes = 2  # k = 4, every draft accepted: 5 tokens a pass (4 drafts and the bonus)
    cost = passes * (pass_cost(5) + draft_cost(draft, 4))
    assert switch_off(passes * 4, passes * 5, cost) is off
