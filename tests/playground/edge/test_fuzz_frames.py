"""A property-based fuzz of the websocket edge against a real daphne (``python -m playground.server``)
with the real model, over real websockets.

Hypothesis draws batches of frames from the frame grammar — valid frames, frames with a field
dropped, replaced by any JSON value, given a lone surrogate or a huge number, unknown keys, broken
JSON text, binary frames — and now and then a frame that must close the socket (over the size
limit, or invalid UTF-8). Model work stays tiny: generations make at most 2 tokens, prompts are
short. For every frame the test checks the documented contract:

- a frame with a readable ``request_id`` gets exactly one last event for that id (its answer or a
  structured ``error``), and a cancel of a live request ends it or is answered ``unknown_request``;
- a frame without a readable id gets one ``error`` without ``request_id``;
- every error has a code, a message and ``param`` (named whenever a field is at fault), and no
  error is ``generation_failed``;
- the socket closes only after a frame over the limit (1009) or invalid UTF-8 (1007), with a reason;
- daphne's log has no traceback and its access log no 5xx.

The figures (frames tried, errors by code, closes, tracebacks, 5xx) are printed at the end.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from playground.edge.frames import REQUEST_ID, parse_json
from playground.wire.events import FINAL_EVENTS, ended_by_cancel
from tests.servers import running_daphne

pytestmark = pytest.mark.real_model

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = 650  # batches of 1–10 frames (drawn with a bias to short ones): about 2,300 frames
MAX_MESSAGE = 1024 * 1024  # daphne's --websocket_max_message_size default
FIELD_CODES = {
    "missing_field",
    "unknown_param",
    "unknown_type",
    "duplicate_request",
    "unknown_request",
    "prompt_too_long",
    "nested_too_deep",
}
FORBIDDEN_CODES = {"generation_failed", "internal_error", "reply_too_large"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    state = tmp_path_factory.mktemp("fuzz")
    access = state / "access.log"
    with running_daphne(
        state,
        module="playground.server",
        server_args=["--access-log", str(access)],
        PLAYGROUND_INTRA_OP_THREADS="1",
        # one client sends thousands of frames: the per-client limits are tested elsewhere
        PLAYGROUND_CLIENT_REQUESTS_PER_SECOND="100000",
        PLAYGROUND_CLIENT_BURST="100000",
    ) as daphne:
        yield {"url": daphne.websocket_url, "origin": daphne.origin, "log": daphne.log_path, "access": access}


# -- the frame grammar ------------------------------------------------------------------------

SURROGATES = st.sampled_from(["\ud800", "a\udfffb", "\udc00", "x\ud83d"])  # lone halves: not encodable
short_text = st.text(max_size=12)
numbers = st.one_of(
    st.integers(-3, 60000),
    st.integers(-(10**60), 10**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([2**63 - 1, 2**63, -1, 0, 1e308, 10**40]),
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, short_text, SURROGATES),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.one_of(short_text, SURROGATES), inner, max_size=3),
    max_leaves=6,
)
valid_params = st.fixed_dictionaries(
    {"max_tokens": st.just(1)},
    optional={
        "temperature": st.floats(0, 2),
        "top_k": st.integers(0, 60),
        "top_p": st.floats(0.05, 1),
        "min_p": st.floats(0, 1),
        "seed": st.one_of(st.none(), st.integers(0, 2**63 - 1)),
        "n": st.integers(1, 2),
        "num_beams": st.integers(1, 2),
        "stop": st.lists(st.text(min_size=1, max_size=4), max_size=2),
        "min_tokens": st.integers(0, 1),
        "logit_bias": st.dictionaries(st.integers(0, 49151).map(str), st.floats(-100, 100), max_size=2),
        "repetition_penalty": st.floats(0.5, 2),
        "dry_multiplier": st.floats(0, 1),
        "ignore_eos": st.booleans(),
    },
)
prompts = st.text(min_size=1, max_size=8)
modes = st.sampled_from(["completion", "chat"])


def _frame(kind: str, **fields: st.SearchStrategy) -> st.SearchStrategy:
    return st.fixed_dictionaries({"type": st.just(kind), **fields}, optional={})


valid_frames = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("generate"), "prompt": prompts, "params": valid_params},
        optional={
            "mode": modes,
            "top_n": st.integers(1, 20),
            "use_cache": st.booleans(),
            "prefix_tokens": st.lists(st.integers(0, 49151), max_size=2),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.just("tokenize"), "text": st.text(max_size=40)},
        optional={
            "mode": st.sampled_from(["completion", "chat", "plain"]),
            "offset": st.integers(0, 5),
            "limit": st.integers(1, 4),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.just("inspect"), "prompt": prompts},
        optional={
            "params": valid_params,
            "variants": st.lists(valid_params, min_size=1, max_size=3),
            "top_n": st.integers(1, 50),
            "prefix_tokens": st.lists(st.integers(0, 49151), max_size=2),
        },
    ),
    st.just({"type": "cancel"}),  # of an id nobody uses
)


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    frame = dict(draw(valid_frames))
    for _ in range(draw(st.integers(1, 3))):
        target = frame
        if isinstance(frame.get("params"), dict) and draw(st.booleans()):
            target = frame["params"] = dict(frame["params"])
        action = draw(st.sampled_from(["drop", "replace", "unknown", "surrogate", "huge", "type"]))
        keys = sorted(target, key=str)
        if action == "drop" and keys:
            target.pop(draw(st.sampled_from(keys)), None)
        elif action == "replace" and keys:
            target[draw(st.sampled_from(keys))] = draw(json_values)
        elif action == "unknown":
            target[draw(st.one_of(short_text, SURROGATES))] = draw(json_values)
        elif action == "surrogate":
            key = draw(st.sampled_from(keys)) if keys else "prompt"
            target[key] = draw(SURROGATES) if draw(st.booleans()) else [draw(SURROGATES)]
        elif action == "huge":
            key = draw(st.sampled_from(["seed", "top_k", "logit_bias", "max_tokens", "top_n", "n"]))
            digits = draw(st.sampled_from([41, 400, 5000]))
            target[key] = {"9" * digits: 1} if key == "logit_bias" else int("9" * min(digits, 4000))
        else:
            frame["type"] = draw(json_values)
    return cheap(frame)


def cheap(frame: dict[str, Any]) -> dict[str, Any]:
    """Keeps the model work of a mutated generate tiny: a missing ``params`` or ``max_tokens``
    (256 by default) or a valid larger one becomes 1 or 2 tokens; bad values stay bad."""
    if frame.get("type") != "generate":
        return frame
    params = frame.get("params", {})
    if not isinstance(params, dict):
        return frame
    limit = params.get("max_tokens", 1)
    if isinstance(limit, int) and not isinstance(limit, bool) and 2 < limit <= 10**6:
        limit = 2
    frame["params"] = params | {"max_tokens": limit}
    return frame


@st.composite
def raw_mutations(draw: st.DrawFn):
    """A change to a frame's JSON text (ASCII only: the text stays valid UTF-8)."""
    action = draw(st.sampled_from(["truncate", "insert", "nan", "nest", "junk"]))
    fraction = draw(st.floats(0, 1))
    piece = draw(st.sampled_from(["{", "]", ",", '"', "\\", "NaN", "-", "1e999", "\\ud800"]))
    depth = draw(st.integers(100, 5000))
    junk = draw(st.text(alphabet=st.characters(codec="ascii"), max_size=30))

    def mutate(text: str) -> str:
        at = int(fraction * len(text))
        return {
            "truncate": lambda: text[:at],
            "insert": lambda: text[:at] + piece + text[at:],
            "nan": lambda: text.replace("1", "NaN", 1),
            "nest": lambda: "[" * depth + "]" * depth,
            "junk": lambda: junk,
        }[action]()

    return mutate


@dataclass
class Send:
    """One frame to send. ``id_rule``: ``fresh`` gives it a new unique id; ``keep`` leaves what the
    grammar made; ``live`` (a cancel) names an earlier request of the batch."""

    frame: Any  # a dict (sent as JSON), str (sent as is), or bytes (a binary frame)
    id_rule: str = "fresh"
    raw: Any = None  # a function of the frame's JSON text: the raw mutation drawn for it
    closes: int | None = None  # the close code this frame must cause


@st.composite
def sends(draw: st.DrawFn) -> Send:
    kind = draw(st.sampled_from(["valid"] * 3 + ["mutated"] * 5 + ["raw"] * 2 + ["binary", "live-cancel", "no-id"]))
    if kind == "valid":
        return Send(draw(valid_frames))
    if kind == "mutated":
        return Send(draw(mutated()), id_rule=draw(st.sampled_from(["fresh"] * 4 + ["keep"])))
    if kind == "raw":
        return Send(draw(mutated()), raw=draw(raw_mutations()))
    if kind == "binary":
        return Send(draw(st.binary(max_size=16)))
    if kind == "live-cancel":
        return Send({"type": "cancel"}, id_rule="live")
    return Send(draw(valid_frames), id_rule="none")


@st.composite
def batches(draw: st.DrawFn) -> list[Send]:
    if draw(st.integers(0, 60)) == 0:  # now and then, a frame that must close the socket
        if draw(st.booleans()):
            return [
                Send(
                    json.dumps({"type": "tokenize", "request_id": "big", "text": "x" * MAX_MESSAGE}), id_rule="keep", closes=1009
                )
            ]
        return [Send(b'{"type": "tokenize", "request_id": "u", "text": "\xff\xfe"}', id_rule="keep", closes=1007)]
    return draw(st.lists(sends(), min_size=1, max_size=10))


# -- the oracle --------------------------------------------------------------------------------


def readable_id(text: str) -> str | None:
    """The request id the server can read from a text frame (the wire JSON's rules)."""
    try:
        message = parse_json(text)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    request_id = message.get("request_id")
    return request_id if isinstance(request_id, str) and REQUEST_ID.match(request_id) else None


@dataclass
class Tally:
    frames: int = 0
    batches: int = 0
    errors: collections.Counter = field(default_factory=collections.Counter)
    answers: collections.Counter = field(default_factory=collections.Counter)
    closes: collections.Counter = field(default_factory=collections.Counter)


class Client:
    def __init__(self, server: dict[str, Any]) -> None:
        self.server = server
        self.ws = None
        self.ids = (f"fz-{n}" for n in itertools.count())
        self.used: set[str] = set()
        self.connections = contextlib.ExitStack()
        self.tally = Tally()

    def socket(self):
        if self.ws is None:
            self.ws = self.connections.enter_context(
                connect(self.server["url"], origin=self.server["origin"], max_size=None, open_timeout=30)
            )
        return self.ws

    def close(self) -> None:
        self.connections.close()
        self.ws = None

    def run(self, batch: list[Send]) -> None:
        self.tally.batches += 1
        if batch[0].closes is not None:
            self._closing(batch[0])
            return
        ws = self.socket()
        expected: list[str] = []  # readable ids, each owed exactly one last event
        anonymous = 0  # frames owed an error without a request id
        cancelled: set[str] = set()  # ids a live cancel of this batch named
        for item in batch:
            frame = item.frame
            if isinstance(frame, dict):
                frame = dict(frame)
                if item.id_rule == "fresh":
                    frame["request_id"] = next(self.ids)
                elif item.id_rule == "live":
                    targets = [i for i in expected if i not in cancelled]
                    frame["request_id"] = targets[-1] if targets else next(self.ids)
                elif item.id_rule == "none":
                    frame.pop("request_id", None)
                text = json.dumps(frame)  # lone surrogates go as \ud800 escapes
                if item.raw:
                    text = item.raw(text)
            else:
                text = frame
            request_id = None if isinstance(text, bytes) else readable_id(text)
            if request_id is not None and request_id in self.used and request_id not in expected:
                continue  # an id the grammar happened to repeat from an earlier batch: not this test's point
            self.tally.frames += 1
            ws.send(text)
            if request_id is None:
                anonymous += 1
            elif item.id_rule == "live" and request_id in expected:
                cancelled.add(request_id)
            else:
                expected.append(request_id)
                self.used.add(request_id)
        events = self._until(ws, set(expected), anonymous)
        self._check(events, expected, anonymous, cancelled)

    def _until(self, ws, unanswered: set[str], anonymous: int) -> list[dict[str, Any]]:
        """Every event up to the last answer owed, then one round trip more: whatever the server
        sends right after a request's last event (a crossed cancel's answer) comes before it."""
        events: list[dict[str, Any]] = []
        while unanswered or sum(1 for e in events if "request_id" not in e) < anonymous:
            events.append(self._receive(ws))
            event = events[-1]
            if event["type"] in FINAL_EVENTS:
                unanswered.discard(event.get("request_id"))
        flush = next(self.ids)
        ws.send(json.dumps({"type": "tokenize", "request_id": flush, "text": "."}))
        while (event := self._receive(ws)).get("request_id") != flush:
            events.append(event)
        assert event["type"] == "tokens", event
        return events

    @staticmethod
    def _receive(ws) -> dict[str, Any]:
        raw = ws.recv(timeout=60)
        assert len(raw.encode()) <= MAX_MESSAGE, "a reply over the frame limit"
        return json.loads(raw)

    def _check(self, events: list[dict[str, Any]], expected: list[str], anonymous: int, cancelled: set[str]) -> None:
        by_id: dict[str | None, list[dict[str, Any]]] = collections.defaultdict(list)
        for event in events:
            by_id[event.get("request_id")].append(event)
            if event["type"] == "error":
                error = event["error"]
                self.tally.errors[error["code"]] += 1
                assert set(error) >= {"code", "message", "param"} and error["message"], event
                assert error["code"] not in FORBIDDEN_CODES, event
                if error["code"] in FIELD_CODES or (
                    error["code"] == "invalid_value" and "a key of the frame" not in error["message"]
                ):
                    assert error["param"] is not None, event  # ("" names an empty key)
                assert len(json.dumps(event)) < 2000, "an error echoing too much"
            elif event["type"] in FINAL_EVENTS:
                self.tally.answers[event["type"]] += 1
        nameless = by_id.pop(None, [])
        assert len(nameless) == anonymous and all(e["type"] == "error" for e in nameless), nameless
        assert set(by_id) <= set(expected), set(by_id) - set(expected)
        for request_id in expected:
            mine = by_id.get(request_id, [])
            finals = [e for e in mine if e["type"] in FINAL_EVENTS]
            answer, crossings = finals[0], finals[1:]
            assert mine[-len(finals) :] == finals, mine  # nothing after a request's last event but a crossed cancel's answer
            assert all(e["type"] == "error" and e["error"]["code"] == "unknown_request" for e in crossings), mine
            if request_id in cancelled:
                assert len(crossings) == (0 if ended_by_cancel(answer) else 1), mine
            else:
                assert not crossings, mine
            if answer["type"] == "done":  # started first (after a ``loading`` where the model was not loaded yet)
                assert [e["type"] for e in mine if e["type"] != "loading"][0] == "started", mine

    def _closing(self, item: Send) -> None:
        self.close()
        ws = self.socket()
        self.tally.frames += 1
        if isinstance(item.frame, bytes):
            ws.send(item.frame, text=True)  # not valid UTF-8, sent as a text frame
        else:
            ws.send(item.frame)
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                ws.recv(timeout=60)
        close = closed.value.rcvd
        assert close is not None and close.code == item.closes and close.reason, closed.value
        self.tally.closes[close.code] += 1
        self.ws = None


@pytest.mark.parametrize("depth", [970, 5000])
def test_a_value_nested_past_any_field_is_refused_by_field_with_its_id_and_no_traceback(server, depth):
    """Found by this fuzz: a list nested 970 deep in a parameter raised RecursionError in the
    server and was answered without its request id."""
    deep = "[" * depth + "]" * depth
    sent = {
        f"deep-stop-{depth}": ('"params": {"stop": ' + deep + "}", "params.stop"),
        f"deep-bias-{depth}": ('"params": {"logit_bias": {"5": ' + deep + "}}", "params.logit_bias"),
        f"deep-messages-{depth}": ('"messages": [{"role": "user", "content": ' + deep + "}]", "messages"),
    }
    log_before = len(server["log"].read_text(errors="replace"))
    with connect(server["url"], origin=server["origin"], max_size=None, open_timeout=30) as ws:
        for request_id, (field_text, _) in sent.items():
            ws.send('{"type": "generate", "request_id": "' + request_id + '", "prompt": "hi", ' + field_text + "}")
        answers = {}
        while len(answers) < len(sent):
            event = json.loads(ws.recv(timeout=60))
            answers[event.get("request_id")] = event
    assert set(answers) == set(sent), answers
    for request_id, (_, param) in sent.items():
        error = answers[request_id]["error"]
        assert (error["code"], error["param"]) == ("nested_too_deep", param), answers[request_id]
    assert "Traceback" not in server["log"].read_text(errors="replace")[log_before:]


def test_every_frame_gets_its_answer_or_a_structured_error(server):
    client = Client(server)

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(batches())
    def fuzz(batch: list[Send]) -> None:
        client.run(batch)

    began = time.monotonic()
    try:
        fuzz()
    finally:
        client.close()
    seconds = time.monotonic() - began
    log = server["log"].read_text(errors="replace")
    access = server["access"].read_text(errors="replace") if server["access"].exists() else ""
    tracebacks = log.count("Traceback")
    server_errors = len(re.findall(r'" 5\d\d ', access))
    tally = client.tally
    print(
        f"\nfuzz: {tally.frames} frames in {tally.batches} batches, {seconds:.0f} s; errors by code {dict(sorted(tally.errors.items()))}; "
        f"answers {dict(tally.answers)}; connections closed {dict(tally.closes)}; tracebacks {tracebacks}; 5xx {server_errors}"
    )
    assert tracebacks == 0, log[-5000:]
    assert server_errors == 0
    assert tally.frames > 1000 and sum(tally.closes.values()) >= 1
