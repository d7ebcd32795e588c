"""The batch's planner without a model: tables of plain states and the plans they must give
(departures, admissions, the decoding, the prefill within its budget), then properties that hold
for any states."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inference.batching.plan import (
    MIN_PREFILL_CHUNK,
    Admit,
    Chunk,
    Departure,
    FreshGroup,
    Intake,
    Leave,
    Planner,
    RunState,
    SoloChunk,
    StepPlan,
    WaitingState,
    wasted_rows,
)

PLANNER = Planner(max_batch=4, prefill_chunk=128, full_prefill_chunk=512)


def decoding(id: int, *slots: int, solo: bool = False) -> RunState:
    """A run whose prompt (10 tokens) is in the cache."""
    return RunState(id, slots or (id,), prompt=10, prefilled=10, solo=solo)


def prefilling(id: int, prompt: int, prefilled: int = 0, slots: tuple[int, ...] = (), **kw) -> RunState:
    return RunState(id, slots or (id,), prompt=prompt, prefilled=prefilled, **kw)


# -- intake: who leaves, who comes in --------------------------------------------------------------

INTAKE = {
    "an empty batch admits in arrival order, each on the lowest free slots": (
        [WaitingState(10, 1), WaitingState(11, 2), WaitingState(12, 1)],
        [],
        Intake(admit=(Admit(10, (0,)), Admit(11, (1, 2)), Admit(12, (3,)))),
    ),
    "a full batch takes nobody": (
        [WaitingState(10, 1)],
        [decoding(0, 0, 1), decoding(1, 2, 3)],
        Intake(),
    ),
    "the slots between held ones are taken, lowest first": (
        [WaitingState(10, 2)],
        [decoding(0, 0), decoding(2, 2)],
        Intake(admit=(Admit(10, (1, 3)),)),
    ),
    "a ticket that does not fit waits, and nobody behind it overtakes it": (
        [WaitingState(10, 3), WaitingState(11, 1)],
        [decoding(0, 0, 1)],
        Intake(),
    ),
    "a cancel leaves before the step, and its slots serve this step's admission": (
        [WaitingState(10, 2)],
        [decoding(0, 0, 1), RunState(1, (2, 3), prompt=10, prefilled=10, cancelled=True)],
        Intake(leave=(Leave(1, Departure.CANCELLED),), admit=(Admit(10, (2, 3)),)),
    ),
    "a run cancelled during its prefill leaves as never started": (
        [],
        [RunState(0, (0,), prompt=300, prefilled=128, cancelled=True)],
        Intake(leave=(Leave(0, Departure.CANCELLED_PREFILLING),)),
    ),
    "a cancelled ticket leaves the line and the next one takes the slot": (
        [WaitingState(10, 1, cancelled=True), WaitingState(11, 1)],
        [decoding(0, 0), decoding(1, 1), decoding(2, 2)],
        Intake(leave=(Leave(10, Departure.CANCELLED_WAITING),), admit=(Admit(11, (3,)),)),
    ),
    "a ticket wider than the batch is refused wherever it waits": (
        [WaitingState(10, 2), WaitingState(11, 5), WaitingState(12, 1)],
        [decoding(0, 0, 1, 2)],
        Intake(leave=(Leave(11, Departure.TOO_WIDE),)),
    ),
    "runs leave first, then waiting tickets, each in arrival order": (
        [WaitingState(10, 1, cancelled=True), WaitingState(11, 9)],
        [RunState(0, (0,), prompt=5, prefilled=5, cancelled=True), RunState(1, (1,), prompt=5, cancelled=True)],
        Intake(
            leave=(
                Leave(0, Departure.CANCELLED),
                Leave(1, Departure.CANCELLED_PREFILLING),
                Leave(10, Departure.CANCELLED_WAITING),
                Leave(11, Departure.TOO_WIDE),
            )
        ),
    ),
}


@pytest.mark.parametrize(("waiting", "runs", "expected"), INTAKE.values(), ids=INTAKE.keys())
def test_intake(waiting, runs, expected):
    assert PLANNER.intake(waiting, runs) == expected


# -- a step's work ---------------------------------------------------------------------------------

STEPS = {
    "decoding runs share one call, in arrival order; nothing to prefill": (
        [decoding(2), decoding(0), decoding(1)],
        StepPlan(decode=(2, 0, 1), budget=128),
    ),
    "nobody decoding: the full budget": (
        [prefilling(0, 700)],
        StepPlan(prefill=(Chunk(0, 0, 512),), budget=512),
    ),
    "the budget is split across prefilling runs, oldest first": (
        [decoding(0), prefilling(1, 100, prefilled=10), prefilling(2, 100)],
        StepPlan(decode=(0,), prefill=(Chunk(1, 10, 100), Chunk(2, 0, 38)), budget=128),
    ),
    "a long prompt takes one chunk per step beside the decoding": (
        [decoding(0), prefilling(1, 1000, prefilled=256)],
        StepPlan(decode=(0,), prefill=(Chunk(1, 256, 384),), budget=128),
    ),
    "a sliver of a budget (below MIN_PREFILL_CHUNK) waits for the next step": (
        [decoding(0), prefilling(1, 120), prefilling(2, 50)],
        StepPlan(decode=(0,), prefill=(Chunk(1, 0, 120),), budget=128),
    ),
    "a chunk that ends its prompt may be shorter than MIN_PREFILL_CHUNK": (
        [decoding(0), prefilling(1, 120), prefilling(2, 50, prefilled=45)],
        StepPlan(decode=(0,), prefill=(Chunk(1, 0, 120), Chunk(2, 45, 50)), budget=128),
    ),
    "fresh prompts at the head of the line start together in one call": (
        [prefilling(0, 5), prefilling(1, 6), prefilling(2, 7)],
        StepPlan(prefill=(FreshGroup((0, 1, 2)),), budget=512),
    ),
    "a group ends at a begun prompt, which gets the rest of the budget": (
        [decoding(9), prefilling(0, 30), prefilling(1, 31), prefilling(2, 300, prefilled=16)],
        StepPlan(decode=(9,), prefill=(FreshGroup((0, 1)), Chunk(2, 16, 83)), budget=128),
    ),
    "a group takes only whole prompts within the budget": (
        [decoding(9), prefilling(0, 60), prefilling(1, 60), prefilling(2, 60)],
        StepPlan(decode=(9,), prefill=(FreshGroup((0, 1)),), budget=128),
    ),
    "one-token prompts are fed alone, never grouped": (
        [prefilling(0, 5), prefilling(1, 1), prefilling(2, 6)],
        StepPlan(prefill=(Chunk(0, 0, 5), Chunk(1, 0, 1), Chunk(2, 0, 6)), budget=512),
    ),
    "prompts too unequal to share a call (wasted rows) are fed one by one": (
        [prefilling(0, 2), prefilling(1, 100)],
        StepPlan(prefill=(Chunk(0, 0, 2), Chunk(1, 0, 100)), budget=512),
    ),
    "solo runs decode on their own states and count as decoding for the budget": (
        [decoding(0, solo=True), decoding(1), prefilling(2, 400)],
        StepPlan(decode=(1,), solo_decode=(0,), prefill=(Chunk(2, 0, 128),), budget=128),
    ),
    "a solo run with a cache prefills in chunks on its own state": (
        [decoding(0), prefilling(1, 400, prefilled=128, solo=True)],
        StepPlan(decode=(0,), prefill=(SoloChunk(1, 128, 256),), budget=128),
    ),
    "a run without a cache takes its whole prompt in one call": (
        [decoding(0), prefilling(1, 400, solo=True, cached=False), prefilling(2, 20)],
        StepPlan(decode=(0,), prefill=(SoloChunk(1, 0, 400),), budget=128),
    ),
    "a solo run breaks a group of fresh prompts": (
        [prefilling(0, 5), prefilling(1, 5, solo=True, cached=False), prefilling(2, 5), prefilling(3, 6)],
        StepPlan(prefill=(Chunk(0, 0, 5), SoloChunk(1, 0, 5), FreshGroup((2, 3))), budget=512),
    ),
}


@pytest.mark.parametrize(("runs", "expected"), STEPS.values(), ids=STEPS.keys())
def test_step(runs, expected):
    assert PLANNER.step(runs) == expected


@pytest.mark.parametrize(
    ("lengths", "wasted"),
    [([7], 0), ([5, 5, 5], 0), ([4, 6], 3), ([2, 100], 98 + 49)],  # padding + a quarter row per head row
)
def test_wasted_rows(lengths, wasted):
    assert wasted_rows(lengths) == wasted


@pytest.mark.parametrize(
    ("max_batch", "prefill_chunk", "full_prefill_chunk", "named"),
    [(0, 16, 512, "max_batch"), (4, 0, 512, "prefill_chunk"), (4, 600, 512, "prefill_chunk")],
)
def test_the_planner_refuses_impossible_numbers(max_batch, prefill_chunk, full_prefill_chunk, named):
    with pytest.raises(ValueError, match=named):
        Planner(max_batch, prefill_chunk, full_prefill_chunk)


# -- properties of any plan ------------------------------------------------------------------------


@st.composite
def batches(draw) -> tuple[Planner, list[WaitingState], list[RunState]]:
    max_batch = draw(st.integers(1, 8))
    full = draw(st.integers(1, 600))
    planner = Planner(max_batch, draw(st.integers(1, full)), full)
    slots = draw(st.permutations(range(max_batch)))
    runs, taken = [], 0
    for id in range(draw(st.integers(0, max_batch))):
        rows = draw(st.integers(1, max(1, max_batch - taken)))
        if taken + rows > max_batch:
            break
        prompt = draw(st.integers(1, 2000))
        solo = draw(st.booleans())
        runs.append(
            RunState(
                id,
                tuple(slots[taken : taken + rows]),
                prompt,
                draw(st.integers(0, prompt)),
                cancelled=draw(st.booleans()),
                solo=solo,
                cached=not solo or draw(st.booleans()),
            )
        )
        taken += rows
    waiting = [
        WaitingState(100 + i, draw(st.integers(1, max_batch + 1)), draw(st.booleans())) for i in range(draw(st.integers(0, 6)))
    ]
    return planner, waiting, runs


@given(batches())
def test_an_intake_never_gives_a_slot_twice_and_keeps_the_line_in_order(batch):
    planner, waiting, runs = batch
    intake = planner.intake(waiting, runs)
    leaving = {leave.id for leave in intake.leave}
    held = [slot for run in runs if run.id not in leaving for slot in run.slots]
    given = [slot for admit in intake.admit for slot in admit.slots]
    assert len(set(held + given)) == len(held + given) and all(0 <= slot < planner.max_batch for slot in given)
    rows = {ticket.id: ticket.rows for ticket in waiting}
    assert all(len(admit.slots) == rows[admit.id] for admit in intake.admit)
    staying = [ticket.id for ticket in waiting if ticket.id not in leaving]
    admitted = [admit.id for admit in intake.admit]
    assert admitted == staying[: len(admitted)]  # the admitted are the head of the line, in order
    assert {run.id for run in runs if run.cancelled} | {t.id for t in waiting if t.cancelled} <= leaving


@given(batches())
def test_a_step_feeds_each_run_once_within_the_budget_and_never_a_sliver(batch):
    planner, _, runs = batch
    runs = [run for run in runs if not run.cancelled]
    plan = planner.step(runs)
    by_id = {run.id: run for run in runs}
    named = list(plan.decode) + list(plan.solo_decode)
    for entry in plan.prefill:
        named += list(entry.runs) if isinstance(entry, FreshGroup) else [entry.run]
    assert len(named) == len(set(named))
    assert set(plan.decode) | set(plan.solo_decode) == {run.id for run in runs if not run.prefilling}
    assert all(by_id[i].solo for i in plan.solo_decode) and not any(by_id[i].solo for i in plan.decode)
    spent, order = 0, []
    for entry in plan.prefill:
        if isinstance(entry, FreshGroup):
            group = [by_id[i] for i in entry.runs]
            assert len(group) > 1 and all(run.prefilled == 0 and not run.solo and run.prompt >= 2 for run in group)
            spent += sum(run.prompt for run in group)
            order += entry.runs
            continue
        run = by_id[entry.run]
        assert entry.begin == run.prefilled and entry.end <= run.prompt
        assert isinstance(entry, SoloChunk) == run.solo
        assert entry.end - entry.begin >= min(run.prompt - run.prefilled, MIN_PREFILL_CHUNK)
        if not run.cached:
            assert entry.end == run.prompt
            spent += min(plan.budget - spent, run.prompt - run.prefilled)
        else:
            spent += entry.end - entry.begin
        order.append(entry.run)
    assert spent <= plan.budget
    assert order == [run.id for run in runs if run.prefilling][: len(order)]  # the oldest prefilling, in order
