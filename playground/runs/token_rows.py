"""A saved run's generated tokens, with named fields, and their compact stored form.

A run keeps one stored row per ``token`` event, a JSON array rather than an object so that a long
run stays small (docs/runs.md, "What is stored"):

    [sample, index, id, token, text, raw_prob, prob, draw, entropy_before, entropy_after,
     elapsed_ms, alternatives, stages(, extra)]

with ``alternatives`` as ``[id, token, raw_prob, prob, removed_by(, extra)]`` rows and ``stages``
as ``[name, kept]`` rows. ``extra``, written only when there is something to keep, is an object of
the event's fields that have no column: ``removed_by``, ``forced``, ``origin``, ``draw_interval``
and ``watched`` (written only when not null / false / empty) and any field the protocol may add
later, so nothing the server sent is lost. Rows saved before these existed have no ``extra`` and
load with the defaults; a row saved before ``origin`` existed reads with the origin its run implies
(``run_origins``: typed and branch from the run's request, the rest from the row, as
``playground.wire.token_event.implied_origin`` says).

Everything else reads these rows through ``TokenRow``: ``TokenRow.from_stored(row)`` and
``row.to_stored()`` convert the stored form, ``TokenRow.from_event(event)`` and ``row.to_event()``
the ``token`` event's shape (without ``type`` and ``request_id``), which is also the export's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from inference.decoding.origin import Origin, PrefixPlan
from playground.wire.token_event import TokenEvent, implied_origin

StoredRow = list[Any]  # the JSON array kept in ``Run.tokens``

# Where each field of an exported token goes (``origin``, added later, after ``forced``).
EXPORT_ORDER = (
    "sample", "index", "id", "token", "text", "raw_prob", "prob", "removed_by", "alternatives", "forced", "origin",
    "draw", "draw_interval", "entropy", "stages", "elapsed_ms", "watched",
)  # fmt: skip

# The ``token`` event's keys that carry no data of the run: they are not stored (``batch`` says how
# the worker batched the step, which no replay or export needs).
ENVELOPE_KEYS = frozenset({"type", "request_id", "batch"})


@dataclass(frozen=True, slots=True)
class Alternative:
    """One of a step's top-N candidates."""

    id: int
    token: str
    raw_prob: float
    prob: float
    removed_by: str | None = None  # the stage that removed it; null when it survived every stage
    extra: Mapping[str, Any] = field(default_factory=dict)

    EVENT_KEYS = frozenset({"id", "token", "raw_prob", "prob", "removed_by"})

    @classmethod
    def from_stored(cls, row: Sequence[Any]) -> Alternative:
        token_id, token, raw_prob, prob, removed_by = row[:5]
        return cls(token_id, token, raw_prob, prob, removed_by, dict(row[5]) if len(row) > 5 else {})

    def to_stored(self) -> StoredRow:
        row = [self.id, self.token, self.raw_prob, self.prob, self.removed_by]
        if self.extra:
            row.append(dict(self.extra))
        return row

    @classmethod
    def from_event(cls, data: Mapping[str, Any]) -> Alternative:
        extra = {k: v for k, v in data.items() if k not in cls.EVENT_KEYS}
        return cls(data["id"], data["token"], data["raw_prob"], data["prob"], data.get("removed_by"), extra)

    def to_event(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "token": self.token,
            "raw_prob": self.raw_prob,
            "prob": self.prob,
            "removed_by": self.removed_by,
            **self.extra,
        }


@dataclass(frozen=True, slots=True)
class Stage:
    """How many candidates a sampler stage kept."""

    name: str
    kept: int

    EVENT_KEYS = frozenset({"name", "kept"})

    def to_stored(self) -> StoredRow:
        return [self.name, self.kept]

    def to_event(self) -> dict[str, Any]:
        return {"name": self.name, "kept": self.kept}


@dataclass(frozen=True, slots=True)
class TokenRow:
    """One generated token of one sample, with the trace of how it was chosen."""

    sample: int
    index: int  # position in its sample's completion, from 0
    id: int
    token: str  # the token's own text
    text: str  # the text it released (held back while a stop string may still match)
    raw_prob: float  # before any sampler stage
    prob: float  # in the final distribution it was drawn from
    draw: float | None  # the uniform random number used; null for a greedy step
    entropy_before: float | None  # in bits, of the raw distribution
    entropy_after: float | None  # of the final distribution
    elapsed_ms: float | None
    alternatives: tuple[Alternative, ...]
    stages: tuple[Stage, ...]
    removed_by: str | None = None  # non-null only for a forced token a stage had removed
    forced: bool = False  # taken from ``prefix_tokens``, not sampled
    # ``Origin``'s value; None: the origin the row's own fields imply (``implied_origin``: stored only
    # when it says more), which for a forced row saved before origins only its run can refine (``run_origins``)
    origin: str | None = None
    # [start, end): the token's segment of the final probabilities stacked in pick order, holding
    # ``draw`` when it was picked; null if its final probability is 0, and in runs saved before it
    draw_interval: tuple[float, float] | None = None
    # the request's watched tokens at this step, as the event sends them (empty when none watched)
    watched: tuple[Mapping[str, Any], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # fields of later protocol versions

    # The keys of a ``token`` event (and of an exported token), in the order the server sends them.
    # The keys of an exported token: the ``token`` event's (``TokenEvent``'s, without its envelope and
    # the optional ``drafted`` and ``batch``), in the order exports have always written them.
    EVENT_KEYS = tuple(
        sorted(
            (k for k in TokenEvent.field_names() if k not in TokenEvent.OPTIONAL and k != "request_id"),
            key=lambda k: EXPORT_ORDER.index(k),
        )
    )
    STORED_COLUMNS = 13  # the positional part of a stored row, before the optional ``extra``
    # named fields stored in ``extra`` (rows predate them)
    IN_EXTRA = ("removed_by", "forced", "origin", "draw_interval", "watched")

    @classmethod
    def from_stored(cls, row: Sequence[Any]) -> TokenRow:
        (sample, index, token_id, token, text, raw_prob, prob, draw, before, after, elapsed, alternatives, stages) = row[
            : cls.STORED_COLUMNS
        ]
        extra = dict(row[cls.STORED_COLUMNS]) if len(row) > cls.STORED_COLUMNS else {}
        removed_by = extra.pop("removed_by", None)
        forced = extra.pop("forced", False)
        origin = extra.pop("origin", None)
        draw_interval = extra.pop("draw_interval", None)
        watched = extra.pop("watched", [])
        return cls(
            sample,
            index,
            token_id,
            token,
            text,
            raw_prob,
            prob,
            draw,
            before,
            after,
            elapsed,
            tuple(Alternative.from_stored(a) for a in alternatives),
            tuple(Stage(name, kept) for name, kept in stages),
            removed_by,
            forced,
            origin,
            _interval(draw_interval),
            tuple(watched),
            extra,
        )

    def to_stored(self) -> StoredRow:
        row: StoredRow = [
            self.sample,
            self.index,
            self.id,
            self.token,
            self.text,
            self.raw_prob,
            self.prob,
            self.draw,
            self.entropy_before,
            self.entropy_after,
            self.elapsed_ms,
            [a.to_stored() for a in self.alternatives],
            [s.to_stored() for s in self.stages],
        ]
        extra = dict(self.extra)
        if self.removed_by is not None:
            extra["removed_by"] = self.removed_by
        if self.forced:
            extra["forced"] = True
        if self.origin is not None and self.origin != implied_origin(self._implying()):
            extra["origin"] = self.origin
        if self.draw_interval is not None:
            extra["draw_interval"] = list(self.draw_interval)
        if self.watched:
            extra["watched"] = [dict(w) for w in self.watched]
        if extra:
            row.append(extra)
        return row

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> TokenRow:
        """A ``token`` event as the server sends it, or a token of an export."""
        entropy = event.get("entropy") or {}
        known = set(cls.EVENT_KEYS) | ENVELOPE_KEYS
        return cls(
            sample=event.get("sample", 0),
            index=event["index"],
            id=event["id"],
            token=event["token"],
            text=event["text"],
            raw_prob=event["raw_prob"],
            prob=event["prob"],
            draw=event.get("draw"),
            entropy_before=entropy.get("before"),
            entropy_after=entropy.get("after"),
            elapsed_ms=event.get("elapsed_ms"),
            alternatives=tuple(Alternative.from_event(a) for a in event["alternatives"]),
            stages=tuple(Stage(s["name"], s["kept"]) for s in event.get("stages", [])),
            removed_by=event.get("removed_by"),
            forced=bool(event.get("forced", False)),
            origin=_said(event),
            draw_interval=_interval(event.get("draw_interval")),
            watched=tuple(event.get("watched") or ()),
            extra={k: v for k, v in event.items() if k not in known},
        )

    def to_event(self) -> dict[str, Any]:
        """The ``token`` event's fields (without ``type`` and ``request_id``), in the server's order."""
        return {
            "sample": self.sample,
            "index": self.index,
            "id": self.id,
            "token": self.token,
            "text": self.text,
            "raw_prob": self.raw_prob,
            "prob": self.prob,
            "removed_by": self.removed_by,
            "alternatives": [a.to_event() for a in self.alternatives],
            "forced": self.forced,
            "origin": self.shown_origin,
            "draw": self.draw,
            "draw_interval": None if self.draw_interval is None else list(self.draw_interval),
            "entropy": {"before": self.entropy_before, "after": self.entropy_after},
            "stages": [s.to_event() for s in self.stages],
            "elapsed_ms": self.elapsed_ms,
            "watched": [dict(w) for w in self.watched],
            **self.extra,
        }

    @property
    def shown_origin(self) -> str:
        """The origin a view shows: the stored one, else what the row implies."""
        return self.origin if self.origin is not None else implied_origin(self._implying())

    def _implying(self) -> dict[str, Any]:
        """The fields ``implied_origin`` reads."""
        return {
            "forced": self.forced,
            "drafted": self.extra.get("drafted"),
            "draw": self.draw,
            "stages": [s.to_event() for s in self.stages],
        }


def _said(event: Mapping[str, Any]) -> str | None:
    """The event's origin where it says more than its other fields imply; else None."""
    origin = event.get("origin")
    return None if origin is None or origin == implied_origin(event) else origin


def run_origins(rows: Sequence[TokenRow], prefix_length: int, typed_tokens: int, branch_index: int | None) -> list[TokenRow]:
    """A run's rows with the origin of every row saved before origins were: the run's last
    ``typed_tokens`` prefix tokens ``typed``; a branch's alternative (a branch of a saved run that
    forced its parent's tokens up to ``branch_index``, then one more: the prefix ends there)
    ``branch``; the rest as the row implies. Rows that carry an origin keep it."""
    branched = typed_tokens == 0 and branch_index is not None and branch_index == prefix_length - 1
    plan = PrefixPlan(prefix_length, min(typed_tokens, prefix_length), branched and prefix_length > 0)
    out = []
    for row in rows:
        if row.origin is None:
            origin = implied_origin(row._implying())
            if row.forced and row.index < prefix_length:
                if row.index >= prefix_length - plan.typed:
                    origin = Origin.TYPED.value
                elif row.index == plan.branch_index:
                    origin = Origin.BRANCH.value
            row = replace(row, origin=origin)
        out.append(row)
    return out


def _interval(value: Sequence[float] | None) -> tuple[float, float] | None:
    """A ``[start, end]`` pair as stored and sent, as the tuple a ``TokenRow`` holds."""
    return None if value is None else (value[0], value[1])


def stored_row_from_event(event: Mapping[str, Any]) -> StoredRow:
    """What the recorder stores for a ``token`` event it observes."""
    return TokenRow.from_event(event).to_stored()


def load_rows(rows: Iterable[Sequence[Any]]) -> list[TokenRow]:
    return [TokenRow.from_stored(row) for row in rows]


def sample_rows(rows: Iterable[Sequence[Any]], sample: int = 0) -> list[TokenRow]:
    """One sample's tokens, in order (sample 0 is the one a page shows and a comparison compares)."""
    return [token for token in load_rows(rows) if token.sample == sample]


def sample_text(rows: Iterable[Sequence[Any]], sample: int = 0) -> str:
    """The text one sample released, joined from its tokens (what a failed run generated)."""
    return "".join(token.text for token in sample_rows(rows, sample))
