"""A saved run's generated tokens: ``token`` events (``playground.wire.token_event.TokenEvent``,
their one definition) in a compact stored form.

A run keeps one stored row per ``token`` event, a JSON array rather than an object so that a long
run stays small (docs/runs.md, "What is stored"):

    [sample, index, id, token, text, raw_prob, prob, draw, entropy_before, entropy_after,
     elapsed_ms, alternatives, stages(, extra)]

with ``alternatives`` as ``[id, token, raw_prob, prob, removed_by]`` rows and ``stages`` as
``[name, kept]`` rows. ``extra``, written only when there is something to keep, is an object of
the event's other fields (all but ``TokenEvent.UNSAVED``), each only when it is not null, false or
empty — ``origin`` only when it says more than the row's other fields imply — so a field added to
the event is kept with no change here. Rows saved before a field existed read it as
``TokenEvent.filled`` says; a row saved before ``origin`` existed reads with the origin its run
implies (``run_origins``: typed and branch from the run's request, the rest from the row, as
``playground.wire.token_event.implied_origin`` says).

``from_stored(row)`` and ``to_stored(token)`` convert the stored form; a token is exported with
``exported(token)``, the event's fields (without ``type`` and ``request_id``) in ``EXPORT_ORDER``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from inference.decoding.origin import Origin, PrefixPlan
from playground.wire.token_event import TokenEvent, implied_origin

StoredRow = list[Any]  # the JSON array kept in ``Run.tokens``

# The stored row's columns: the event's fields (``entropy``'s two parts) in the row's order.
COLUMNS = (
    "sample", "index", "id", "token", "text", "raw_prob", "prob", "draw", "entropy.before", "entropy.after",
    "elapsed_ms", "alternatives", "stages",
)  # fmt: skip
IN_COLUMNS = frozenset(column.split(".")[0] for column in COLUMNS)  # the event's fields the columns keep
ALTERNATIVE_COLUMNS = ("id", "token", "raw_prob", "prob", "removed_by")

# Where an exported token's fields go, as exports have always written them (``origin``, added
# later, after ``forced``); fields the event gains later follow in the event's own order.
EXPORT_ORDER = (
    "sample", "index", "id", "token", "text", "raw_prob", "prob", "removed_by", "alternatives", "forced", "origin",
    "draw", "draw_interval", "entropy", "stages", "elapsed_ms", "watched",
)  # fmt: skip

# The ``token`` event's keys that carry no data of the run: they are not stored (``batch`` says how
# the worker batched the step, which no replay or export needs).
ENVELOPE_KEYS = frozenset({"type"} | TokenEvent.UNSAVED)
# The fields a stored row keeps in its ``extra`` object, in the event's order.
IN_EXTRA = tuple(name for name in TokenEvent.field_names() if name not in IN_COLUMNS | ENVELOPE_KEYS)


def to_stored(token: TokenEvent) -> StoredRow:
    event = token.saved_json()
    row: StoredRow = [
        *(event[name] for name in COLUMNS[:7]),
        event["draw"],
        event["entropy"]["before"],
        event["entropy"]["after"],
        event["elapsed_ms"],
        [[a[key] for key in ALTERNATIVE_COLUMNS] for a in event["alternatives"]],
        [[s["name"], s["kept"]] for s in event["stages"]],
    ]
    # a field left out only when null (a speculative run's ``drafted``) keeps its false; the others
    # take no room when false or empty
    extra = {
        name: event[name]
        for name in IN_EXTRA
        if event.get(name) is not None and (name in TokenEvent.OPTIONAL or event[name] not in (False, []))
    }
    if extra.get("origin") == implied_origin(event):
        del extra["origin"]  # what the row implies takes no room
    if extra:
        row.append(extra)
    return row


def from_stored(row: Sequence[Any]) -> TokenEvent:
    """A stored row as its token (``EventError`` for a row that is not one)."""
    (sample, index, token_id, token, text, raw_prob, prob, draw, before, after, elapsed, alternatives, stages) = row[
        : len(COLUMNS)
    ]
    event = {
        "sample": sample,
        "index": index,
        "id": token_id,
        "token": token,
        "text": text,
        "raw_prob": raw_prob,
        "prob": prob,
        "draw": draw,
        "entropy": {"before": before, "after": after},
        "elapsed_ms": elapsed,
        "alternatives": [dict(zip(ALTERNATIVE_COLUMNS, a[: len(ALTERNATIVE_COLUMNS)])) for a in alternatives],
        "stages": [{"name": name, "kept": kept} for name, kept in stages],
        "removed_by": None,
        "forced": False,
        **(row[len(COLUMNS)] if len(row) > len(COLUMNS) else {}),
    }
    return TokenEvent.from_saved(event)


def exported(token: TokenEvent) -> dict[str, Any]:
    """The token as an export writes it (and the run's page reads it): the event's fields but
    ``type`` and ``request_id``, in ``EXPORT_ORDER``."""
    return token.saved_json(EXPORT_ORDER)


def stored_row_from_event(event: Mapping[str, Any]) -> StoredRow:
    """What the recorder stores for a ``token`` event it observes, and an import for a checked
    token of an export."""
    return to_stored(TokenEvent.from_saved({key: value for key, value in event.items() if key not in ENVELOPE_KEYS}))


def run_origins(rows: Sequence[TokenEvent], prefix_length: int, typed_tokens: int, branch_index: int | None) -> list[TokenEvent]:
    """A run's tokens with the origin of every row saved before origins were: the run's last
    ``typed_tokens`` prefix tokens ``typed``; a branch's alternative (a branch of a saved run that
    forced its parent's tokens up to ``branch_index``, then one more: the prefix ends there)
    ``branch``; the rest as the row implies. A row whose stored origin says more keeps it (a row
    stores none where its other fields imply it: those the request may refine)."""
    branched = typed_tokens == 0 and branch_index is not None and branch_index == prefix_length - 1
    plan = PrefixPlan(prefix_length, min(typed_tokens, prefix_length), branched and prefix_length > 0)
    out = []
    for row in rows:
        if row.forced and row.index < prefix_length and row.origin.value == implied_origin(_implying(row)):
            if row.index >= prefix_length - plan.typed:
                row = replace(row, origin=Origin.TYPED)
            elif row.index == plan.branch_index:
                row = replace(row, origin=Origin.BRANCH)
        out.append(row)
    return out


def _implying(row: TokenEvent) -> dict[str, Any]:
    """The fields ``implied_origin`` reads."""
    return {
        "forced": row.forced,
        "drafted": row.drafted,
        "draw": row.draw,
        "stages": [{"name": s.name, "kept": s.kept} for s in row.stages],
    }


def load_rows(rows: Iterable[Sequence[Any]]) -> list[TokenEvent]:
    return [from_stored(row) for row in rows]


def sample_rows(rows: Iterable[Sequence[Any]], sample: int = 0) -> list[TokenEvent]:
    """One sample's tokens, in order (sample 0 is the one a page shows and a comparison compares)."""
    return [token for token in load_rows(rows) if token.sample == sample]


def sample_text(rows: Iterable[Sequence[Any]], sample: int = 0) -> str:
    """The text one sample released, joined from its tokens (what a failed run generated)."""
    return "".join(token.text for token in sample_rows(rows, sample))
