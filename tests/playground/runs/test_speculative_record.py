"""A saved speculative run's record (``fields.RUN``'s ``speculative``): its totals say why speculation
was switched off (``reason``: the switch-off rule's numbers), a record saved before they said so
reads ``reason`` as null, and a bad reason is named by its path."""

from __future__ import annotations

import pytest

from playground.runs.errors import SchemaError
from playground.runs.fields import RUN

CHECK = RUN["speculative"].check
TOTALS = {"drafted": 0, "accepted": 0, "verifications": 0, "switched_off_at": 0}
CANNOT_PAY = {"rule": "cannot_pay", "tokens": 5, "steps": 5.65}


def record(**totals) -> dict:
    return {"totals": TOTALS | totals, "verifications": []}


def test_a_reason_is_kept_and_one_left_out_reads_as_null():
    assert CHECK(record(reason=CANNOT_PAY), "run.speculative") == record(reason=CANNOT_PAY)
    older = record(switched_off_at=14)  # saved before the totals said why
    assert CHECK(older, "run.speculative") == record(switched_off_at=14, reason=None)
    assert RUN["speculative"].export(older) == record(switched_off_at=14, reason=None)
    assert older == record(switched_off_at=14)  # the stored value is not touched
    assert CHECK({"totals": None, "verifications": []}, "run.speculative") == {"totals": None, "verifications": []}


@pytest.mark.parametrize(
    ("reason", "switched_off_at", "path"),
    [
        ({"rule": "too_slow", "tokens": 5, "steps": 5.0}, 0, "run.speculative.totals.reason.rule"),
        ({"rule": "cannot_pay", "tokens": "5", "steps": 5.0}, 0, "run.speculative.totals.reason.tokens"),
        ({"rule": "cannot_pay", "tokens": 5, "steps": None}, 0, "run.speculative.totals.reason.steps"),
        ({"rule": "cannot_pay", "tokens": 5}, 0, "run.speculative.totals.reason.steps"),
        ({"rule": "cannot_pay", "tokens": 5, "steps": 5.0, "k": 4}, 0, "run.speculative.totals.reason.k"),
        ("cannot_pay", 0, "run.speculative.totals.reason"),
        (CANNOT_PAY, None, "run.speculative.totals.reason"),  # a reason for a run that never switched off
    ],
)
def test_a_bad_reason_is_named_by_its_path(reason, switched_off_at, path):
    with pytest.raises(SchemaError) as caught:
        CHECK(record(reason=reason, switched_off_at=switched_off_at), "run.speculative")
    assert caught.value.param == path
