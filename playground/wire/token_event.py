"""The ``token`` event (docs/websocket-api.md, ``token``) as one typed class: made from the loop's
``TokenStep`` by the worker, written with ``to_json`` and read back with ``from_json`` by whoever
needs its fields (the recorder, saved runs, export and import, the HTTP trace), and described by
``json_schema()`` — the schema the page's test fixtures are checked against
(``static/shared/token-event.schema.json``, written by
``python -m playground.wire.token_event --write``; a test keeps it current).

``origin`` (``inference.decoding.origin.Origin``) says how the token got there. An event of a run
saved before the field existed reads with the origin its ``forced``, ``drafted``, ``draw`` and
stage counts imply (``implied_origin``); only the run's request can tell a typed or branched
prefix token from a kept one (``playground.runs.token_rows.run_origins``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, get_args, get_origin

from inference.batching.slots import BatchStep
from inference.decoding.origin import GRAMMAR_STAGE, TOKEN_ORIGINS, Origin
from inference.decoding.results import TokenStep
from inference.sampling import trace
from inference.sampling.trace import Count, Prob, Range
from inference.text import TextCodec
from playground.wire import event_json
from playground.wire.event_json import EventError

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "static" / "shared" / "token-event.schema.json"


Amount = Annotated[float, Range(0)]  # entropies, milliseconds


@dataclass(frozen=True, slots=True)
class Alternative(trace.Alternative):
    """One of the step's top-N tokens by raw probability: the trace's ``Alternative`` (``prob`` 0
    when a stage removed it, ``removed_by`` null when it survived every stage) with its text."""

    token: str

    KEYS: ClassVar[tuple[str, ...]] = ("id", "token", "raw_prob", "prob", "removed_by")  # the JSON's order

    @classmethod
    def of(cls, alternative: trace.Alternative, text_of: Callable[[int], str]) -> Alternative:
        a = alternative
        return cls(a.id, a.raw_prob, a.prob, a.removed_by, text_of(a.id))


Stage = trace.StageCount  # how many tokens a sampler stage kept: ``{name, kept}``


@dataclass(frozen=True, slots=True)
class Entropy:
    """Entropy in nats of the raw distribution and of the final one."""

    before: Amount | None
    after: Amount | None


@dataclass(frozen=True, slots=True)
class Watched(trace.Watched):
    """A watched token at this step (the request's ``watch``), wherever it ranks: the trace's
    ``Watched`` with its text (last, as the event has always sent it)."""

    token: str

    @classmethod
    def of(cls, watched: trace.Watched, text_of: Callable[[int], str]) -> Watched:
        w = watched
        return cls(w.id, w.raw_prob, w.prob, w.raw_rank, w.rank, w.removed_by, text_of(w.id))


@dataclass(frozen=True, slots=True)
class TraceView:
    """What one step of the chain did, as every event that shows a step carries it (the ``token``
    event, each trace of an ``inspection``): the alternatives, each stage's count, the entropies."""

    alternatives: tuple[Alternative, ...]
    stages: tuple[Stage, ...]
    entropy: Entropy

    @classmethod
    def of(cls, step_trace: trace.StepTrace, text_of: Callable[[int], str]) -> TraceView:
        return cls(
            tuple(Alternative.of(a, text_of) for a in step_trace.alternatives),
            step_trace.stages,
            Entropy(step_trace.entropy_before, step_trace.entropy_after),
        )

    def to_json(self) -> dict[str, Any]:
        return event_json.write(self)


@dataclass(frozen=True, slots=True)
class BatchView:
    """The worker's step counter, and the rows and requests that took a token in that step."""

    step: int
    rows: int
    requests: int


@dataclass(frozen=True, slots=True)
class TokenEvent:
    """One generated token with the trace of how it was chosen; ``to_json`` writes the keys in
    this order (``drafted`` only for a speculative run, ``batch`` only from a batching worker)."""

    request_id: str
    sample: Count
    index: Count
    id: Count
    token: str  # the token's own text; bytes of a partial character as <0xF0>
    text: str  # the output text it releases (may be empty)
    raw_prob: Prob
    prob: Prob
    removed_by: str | None  # the stage that removed the chosen token (a forced one only)
    forced: bool  # taken from the request's prefix_tokens
    origin: Origin
    draw: Prob | None  # the uniform number the pick (or the acceptance rule) used; null when greedy
    draw_interval: tuple[Prob, Prob] | None
    alternatives: tuple[Alternative, ...]
    stages: tuple[Stage, ...]
    entropy: Entropy
    watched: tuple[Watched, ...]
    elapsed_ms: Amount | None
    drafted: bool | None = None  # speculative runs only: an accepted draft
    batch: BatchView | None = None

    TYPE: ClassVar[str] = "token"
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"drafted", "batch"})  # left out when null
    # Fields a saved run's token may lack (saved before they existed): each reads as null, false or
    # empty, ``origin`` as ``implied_origin`` says. A field added to the event is added here too, and
    # to the wire keys pinned by hand in tests/playground/wire/test_token_event.py (the tests' one pin).
    LATER: ClassVar[tuple[str, ...]] = ("origin", "draw_interval", "watched")
    UNSAVED: ClassVar[frozenset[str]] = frozenset({"request_id", "batch"})  # no saved run or export keeps them

    @classmethod
    def of_step(
        cls, request_id: str, step: TokenStep, codec: TextCodec, batch: BatchStep | None = None, speculative: bool = False
    ) -> TokenEvent:
        step_trace = step.trace
        chosen = step_trace.chosen
        assert chosen is not None  # a step's trace always describes its token
        text_of = codec.token_text
        view = TraceView.of(step_trace, text_of)
        return cls(
            request_id=request_id,
            sample=step.sample,
            index=step.index,
            id=step.token_id,
            token=text_of(step.token_id),
            text=step.text,
            raw_prob=chosen.raw_prob,
            prob=chosen.prob,
            removed_by=chosen.removed_by,
            forced=step.forced,
            origin=step.origin,
            draw=step_trace.draw,
            draw_interval=step_trace.draw_interval,
            alternatives=view.alternatives,
            stages=view.stages,
            entropy=view.entropy,
            watched=tuple(Watched.of(w, text_of) for w in step_trace.watched),
            elapsed_ms=round(step.elapsed_ms, 3),
            drafted=step.drafted if speculative else None,
            batch=None if batch is None else BatchView(batch.step, batch.rows, batch.requests),
        )

    def to_json(self) -> dict[str, Any]:
        """The event as the JSON object the websocket sends."""
        out: dict[str, Any] = {"type": self.TYPE}
        for name, write in event_json.writers(type(self)).items():
            value = getattr(self, name)
            if value is None and name in self.OPTIONAL:
                continue
            out[name] = write(value)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TokenEvent:
        """A ``token`` event's JSON object, checked field by field (``EventError`` names the first
        bad one). ``origin`` may be missing (events saved before it): ``implied_origin``."""
        if not isinstance(data, Mapping):
            raise EventError("(event)", "must be an object")
        if data.get("type", cls.TYPE) != cls.TYPE:
            raise EventError("type", f"must be {cls.TYPE!r}")
        if "origin" not in data:
            data = {**data, "origin": implied_origin(data)}
        return event_json.read(cls, {"request_id": "", **data})

    @classmethod
    def from_saved(cls, data: Mapping[str, Any]) -> TokenEvent:
        """A saved run's token (an export's, or a stored row's fields): the event without its
        ``UNSAVED`` fields and ``type``; a ``LATER`` field may be missing; a key that names no
        field is refused. Its ``request_id`` is empty."""
        if not isinstance(data, Mapping):
            raise EventError("(event)", "must be an object")
        known = event_json.field_names(cls)
        unknown = sorted(key for key in data if key not in known or key in cls.UNSAVED)
        if unknown:
            raise EventError(unknown[0], "is not a field of this schema")
        return event_json.read(cls, {"request_id": "", **cls.filled(data)})

    @classmethod
    def filled(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """``data`` with each ``LATER`` field it lacks as a token saved before that field reads."""
        missing = [name for name in cls.LATER if name not in data]
        if not missing:
            return dict(data)
        hints = event_json.class_hints(cls)
        later = {name: implied_origin(data) if name == "origin" else _empty(hints[name]) for name in missing}
        return {**data, **later}

    def saved_json(self, order: Sequence[str] = ()) -> dict[str, Any]:
        """The token as a saved run exports it: no ``UNSAVED`` field, no null ``OPTIONAL`` one; the
        fields in ``order`` first, then the rest in the class's order."""
        writers = event_json.writers(type(self))
        names = [*order, *(name for name in writers if name not in order)]
        out: dict[str, Any] = {}
        for name in names:
            value = getattr(self, name)
            if name in self.UNSAVED or (value is None and name in self.OPTIONAL):
                continue
            out[name] = writers[name](value)
        return out

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The event's data keys in order (without ``type``)."""
        return event_json.field_names(cls)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The event's JSON Schema (draft 2020-12), derived from the fields above."""
        schema = _schema(cls)  # (a saved run's token is the event without ``type`` and ``request_id``: both optional)
        schema["properties"] = {"type": {"const": cls.TYPE}, **schema["properties"]}
        schema["required"] = [name for name in schema["required"] if name != "request_id"]
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "token event (docs/websocket-api.md)",
            "$comment": "made by `python -m playground.wire.token_event --write` from playground/wire/token_event.py; edit that",
            **schema,
        }


def implied_origin(data: Mapping[str, Any]) -> str:
    """The origin an event without one implies: ``draft`` when ``drafted``, ``kept`` when forced
    (only the run's request can say typed or branch), else what the loop would say of a pick."""
    if data.get("drafted"):
        return Origin.DRAFT.value
    if data.get("forced"):
        return Origin.KEPT.value
    before: int | None = None
    for stage in data.get("stages") or ():
        if isinstance(stage, Mapping) and stage.get("name") == GRAMMAR_STAGE:
            if stage.get("kept") == 1 and (before is None or before > 1):
                return Origin.FORCED_BY_GRAMMAR.value
            break
        before = stage.get("kept") if isinstance(stage, Mapping) else None
    return (Origin.GREEDY if data.get("draw") is None else Origin.SAMPLED).value


def _empty(hint: Any) -> Any:
    """What a field saved before it existed reads as: null, false or an empty list."""
    nullable, hint = event_json.nullable_of(hint)
    if nullable:
        return None
    if hint is bool:
        return False
    if get_origin(hint) is tuple:
        return []
    raise TypeError(f"a field added later must be nullable, a bool or a list; not {hint!r}")


# Describing the fields, by their type hints.


def _schema(cls: type) -> dict[str, Any]:
    hints = event_json.class_hints(cls)
    optional = getattr(cls, "OPTIONAL", frozenset())
    names = list(event_json.field_names(cls))
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {name: _type_schema(hints[name]) for name in names},
        "required": [name for name in names if name not in optional],
    }


def _type_schema(hint: Any) -> dict[str, Any]:
    nullable, hint = event_json.nullable_of(hint)
    hint, bounds = event_json.range_of(hint)
    if hint is Origin:
        schema: dict[str, Any] = {"enum": [o.value for o in TOKEN_ORIGINS]}
    elif hint in (bool, int, float, str):
        schema = {"type": {bool: "boolean", int: "integer", float: "number", str: "string"}[hint]}
        if bounds is not None:
            schema["minimum"] = bounds.low
            if bounds.high is not None:
                schema["maximum"] = bounds.high
    elif get_origin(hint) is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            schema = {"type": "array", "items": _type_schema(args[0])}
        else:
            items = [_type_schema(a) for a in args]
            schema = {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    else:
        schema = _schema(hint)
    if not nullable:
        return schema
    if "enum" in schema:
        return {"enum": [*schema["enum"], None]}
    return {**schema, "type": [schema["type"], "null"]}


def schema_text() -> str:
    return json.dumps(TokenEvent.json_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str]) -> int:
    """``--write``: writes the schema file; otherwise prints it."""
    if list(argv) == ["--write"]:
        SCHEMA_FILE.write_text(schema_text(), encoding="utf-8")
        print(f"wrote {SCHEMA_FILE.relative_to(SCHEMA_FILE.parents[2])}")
        return 0
    if argv:
        print("usage: python -m playground.wire.token_event [--write]", file=sys.stderr)
        return 2
    sys.stdout.write(schema_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
