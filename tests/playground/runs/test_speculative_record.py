"""A saved speculative run's record (``fields.RUN``'s ``speculative``): its totals say why speculation
was switched off (``reason``: the switch-off rule's numbers), a record saved before they said so
reads ``reason`` as null, and a bad reason is named by its path. The totals are drafted / checked /
accepted as ``SpeculativeTotals`` defines them, equal to the verification records' counts; a record
saved when ``drafted`` counted the checked drafts only reads in today's shape."""

from __future__ import annotations

import pytest

from playground.runs.errors import SchemaError
from playground.runs.fields import RUN

CHECK = RUN["speculative"].check
TOTALS = {"drafted": 0, "checked": 0, "accepted": 0, "verifications": 0, "switched_off_at": 0}
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


def draft(token_id: int, accepted: bool | None) -> dict:
    judged = accepted is not None
    return {
        "id": token_id,
        "token": f"t{token_id}",
        "accepted": accepted,
        "p": 1.0 if accepted else 0.0 if judged else None,
        "q": 1.0 if judged else None,
        "draw": None,
    }


# Two passes: 1 draft rejected; 4 drafts of which the first is rejected and 3 never checked.
VERIFICATIONS = [
    {"sample": 0, "index": 1, "drafted": [draft(5, False)], "accepted": 0, "corrected": {"id": 6, "token": "t6"}, "bonus": None},
    {
        "sample": 0,
        "index": 2,
        "drafted": [draft(7, True), draft(8, False), draft(9, None), draft(10, None)],
        "accepted": 1,
        "corrected": {"id": 11, "token": "t11"},
        "bonus": None,
    },
]
TODAY = {"drafted": 5, "checked": 3, "accepted": 1, "verifications": 2, "switched_off_at": None, "reason": None}


def test_the_totals_are_the_verification_records_counts():
    record = {"totals": TODAY, "verifications": VERIFICATIONS}
    assert CHECK(record, "run.speculative") == record
    for key, wrong in (("drafted", 3), ("checked", 5), ("accepted", 0), ("verifications", 5)):
        with pytest.raises(SchemaError) as caught:
            CHECK({"totals": TODAY | {key: wrong}, "verifications": VERIFICATIONS}, "run.speculative")
        assert caught.value.param == f"run.speculative.totals.{key}"
        assert f"got {wrong}" in str(caught.value)


def test_a_record_from_when_drafted_meant_checked_reads_in_todays_shape():
    old = {"totals": {"drafted": 3, "accepted": 1, "verifications": 2, "switched_off_at": None}, "verifications": VERIFICATIONS}
    today = {"totals": TODAY, "verifications": VERIFICATIONS}
    assert CHECK(old, "run.speculative") == today
    assert RUN["speculative"].export(old) == today
    assert "checked" not in old["totals"]  # the stored value is not touched
