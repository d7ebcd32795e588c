"""The switch-off rule's table: a run never starts drafting when even a fully accepted pass costs
more steps than it makes tokens; it stops once its verification passes made fewer tokens than the
plain steps their cost would have bought, and never before enough drafts."""

from __future__ import annotations

import pytest

from inference.speculative.switch_off import (
    DRAFT_TOKEN_COST,
    PASS_COST,
    SWITCH_OFF_AFTER,
    SwitchedOff,
    best_case,
    cannot_pay,
    draft_cost,
    low_acceptance,
    pass_cost,
    switch_off,
)


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


def test_before_the_first_draft_the_best_case_is_every_draft_accepted():
    assert best_case("prompt_lookup", 4) == (5, pass_cost(5))
    assert best_case("fast", 4) == (5, pytest.approx(4 * DRAFT_TOKEN_COST["fast"] + PASS_COST[5]))


@pytest.mark.parametrize("k", range(1, 9))
def test_prompt_lookup_can_always_pay_at_best(k):
    assert cannot_pay("prompt_lookup", k) is None  # a pass of k + 1 tokens costs less than k + 1 steps


@pytest.mark.parametrize("k", range(1, 9))
def test_the_rule_refuses_exactly_where_the_best_case_makes_no_more_tokens_than_steps(k):
    tokens, steps = best_case("fast", k)
    expected = SwitchedOff("cannot_pay", k + 1, round(steps, 2)) if tokens <= steps else None
    assert cannot_pay("fast", k) == expected


def test_the_fast_draft_cannot_pay_at_k_4_on_this_machine():
    # the measured costs (module docstring): 4 drafted tokens and a pass of 5 cost more than 5 steps
    assert cannot_pay("fast", 4) == SwitchedOff("cannot_pay", 5, round(4 * DRAFT_TOKEN_COST["fast"] + PASS_COST[5], 2))
    assert cannot_pay("fast", 4).to_dict() == {"rule": "cannot_pay", "tokens": 5, "steps": cannot_pay("fast", 4).steps}


def test_low_acceptance_says_what_the_passes_made_and_cost():
    assert low_acceptance(SWITCH_OFF_AFTER, 5, 5.304) == SwitchedOff("low_acceptance", 5, 5.3)
    assert low_acceptance(SWITCH_OFF_AFTER, 6, 5.3) is None
