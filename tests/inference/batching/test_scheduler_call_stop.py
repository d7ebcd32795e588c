"""A cancel that lands while the step's decoder calls are under way, on the tiny model: a call whose
runs are all cancelled stops mid-way (prefill, decode, a draft model's drafting), its runs end as
cancelled with what they had made before it and nothing after; a call with one run still wanted
runs to its end, and that run gives what it gives alone; the stopped call leaves nothing broken
for the runs after it.

The cancel is made to land deterministically inside the step: the ticket's flag rises right after
the intake has read it (as a closed connection's cancel arriving just then), so the intake admits
or keeps the run and the step's call is the first to hear of it. Whether a call was stopped is read
from what the runs got (a stopped call gives its runs no token), never from a clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from inference.batching.scheduler import Scheduler, Ticket
from inference.call_stop import CancelFlag
from inference.decoding.generation import Finished
from inference.decoding.loop_params import SpeculativeParams
from inference.errors import Cancelled
from inference.speculative import DraftSources

from .test_scheduler import Listener, assert_same_as_alone, drain, request, submit_all

STOPPED = "stopped mid-way"  # what the runner logs for a call it stopped


class RisesAfterRead(CancelFlag):
    """A cancel flag that rises right after it is read once ``due()``: the read says it has not."""

    def __init__(self, due: Callable[[], bool]) -> None:
        super().__init__()
        self.due = due

    def is_set(self) -> bool:
        was = super().is_set()
        if not was and self.due():
            self.set()
        return was


@dataclass
class LateCancel(Listener):
    """A ticket whose cancel lands right after the intake reads its flag once the run has taken
    ``cancel_after`` tokens (0: when it is admitted); ``risen_at``: the tokens it had then."""

    risen_at: int | None = None

    def __post_init__(self) -> None:
        self.flag = RisesAfterRead(self._due)

    def _due(self) -> bool:
        if self.cancel_after is None or len(self.steps) < self.cancel_after:
            return False
        self.risen_at = len(self.steps)
        return True

    def ticket(self) -> Ticket:
        return Ticket(self.request, self.flag.is_set, self.deliver, self.fail, self.flag)


def finished(listener: Listener) -> Finished:
    item = listener.items[-1]
    assert isinstance(item, Finished), listener.items
    return item


def stopped_calls(caplog) -> int:
    return sum(STOPPED in record.getMessage() for record in caplog.records)


def test_a_run_cancelled_during_its_prefill_call_ends_without_starting(tiny_runtime, caplog):
    caplog.set_level(logging.INFO, logger="inference.batching.runner")
    scheduler = Scheduler(tiny_runtime, max_batch=4)
    late = LateCancel(request("Once upon a time there was a long prompt", max_tokens=20), cancel_after=0)
    submit_all(scheduler, [late])
    drain(scheduler, [late])
    assert isinstance(late.error, Cancelled) and late.items == []  # never started: nothing made, nothing saved
    assert stopped_calls(caplog) == 1


def test_runs_cancelled_during_a_shared_decode_call_keep_what_they_made_before_it(tiny_runtime, caplog):
    caplog.set_level(logging.INFO, logger="inference.batching.runner")
    scheduler = Scheduler(tiny_runtime, max_batch=4)
    both = [
        LateCancel(request("Once upon a time", temperature=1.0, seed=4, max_tokens=30), cancel_after=3),
        LateCancel(request("The capital of France is", max_tokens=30), cancel_after=3),
    ]
    submit_all(scheduler, both)
    drain(scheduler, both)
    for listener in both:  # the call of their fourth token was stopped: three tokens each, as cancelled
        assert listener.risen_at == 3
        assert finished(listener).reason == "cancelled" and finished(listener).completion_tokens == 3
    assert stopped_calls(caplog) == 1
    after = Listener(request("Write a haiku", temperature=0.7, seed=9, max_tokens=12))  # their slots, the same session
    submit_all(scheduler, [after])
    drain(scheduler, [after])
    assert_same_as_alone(tiny_runtime, after)


def test_a_call_with_a_run_still_wanted_runs_to_its_end(tiny_runtime, caplog):
    caplog.set_level(logging.INFO, logger="inference.batching.runner")
    scheduler = Scheduler(tiny_runtime, max_batch=4)
    cancelled = LateCancel(request("Once upon a time", temperature=1.0, seed=4, max_tokens=30), cancel_after=3)
    wanted = LateCancel(request("The capital of France is", max_tokens=12))
    submit_all(scheduler, [cancelled, wanted])
    drain(scheduler, [cancelled, wanted])
    # the shared call of its fourth token ran: it took that token, then left at the next intake
    assert cancelled.risen_at == 3
    assert finished(cancelled).reason == "cancelled" and finished(cancelled).completion_tokens == 4
    assert stopped_calls(caplog) == 0
    assert_same_as_alone(tiny_runtime, wanted)


def test_a_run_cancelled_while_its_draft_model_drafts_ends_before_its_next_token(tiny_runtime):
    drafts = DraftSources(tiny_runtime, Path("models"), lambda directory: tiny_runtime)  # the tiny model as `fast`
    scheduler = Scheduler(tiny_runtime, max_batch=4, drafts=drafts)
    greedy = request("Once upon a time", max_tokens=30)
    drafting = LateCancel(replace(greedy, speculative=SpeculativeParams("fast", 4, switch_off=False)), cancel_after=2)
    beside = Listener(request("The capital of France is", max_tokens=12))
    submit_all(scheduler, [drafting, beside])
    drain(scheduler, [drafting, beside])
    assert drafting.risen_at is not None and drafting.risen_at >= 2  # (a verified draft takes several tokens a step)
    # its drafting call was stopped: no token after the cancel, not even the verification's
    assert finished(drafting).reason == "cancelled" and finished(drafting).completion_tokens == drafting.risen_at
    assert_same_as_alone(tiny_runtime, beside)
