"""The batch view's pure modules in Node: the step log (static/playground/js/batch-steps.js) built
from token events' `batch` fields as the websocket API defines them, and the load indicator's
sentence (load-indicator.js) from /api/load's document (playground/edge/load.py's `summarize`)."""

from __future__ import annotations

from playground.edge import load
from tests.js import module_url, run_js

REPLAY = f"""
const {{ StepLog }} = await import("{module_url("playground/js/batch-steps.js")}");
const log = new StepLog();
for (const [lane, event] of INPUT.events) {{
  if (event.type === "started") log.started(lane, event);
  else if (event.type === "token") log.token(lane, event);
  else log.ended(lane);
}}
"""  # INPUT.events: [lane, event] pairs, fed to a StepLog as the batch page feeds it

STEP_LOG = (
    REPLAY
    + """
const held = Object.fromEntries(log.heldSlots());
console.log(JSON.stringify({
  reported: log.reported, columns: log.columns(), latest: log.latest, peakRows: log.peakRows, maxBatch: log.maxBatch,
  laneSteps: Object.fromEntries(log.laneSteps), held,
  slots: Object.fromEntries([...log.slots].map(([lane, s]) => [lane, { slots: s.slots, ended: s.ended, freedAfter: s.freedAfter }])),
  stepLanes: Object.fromEntries([...log.steps].map(([step, s]) => [step, [...s.lanes].sort()])),
}));
"""
)


def started(slots: list[int]) -> dict:
    return {"type": "started", "batch": {"slots": slots, "max_batch": 4}}


def token(index: int, step: int, rows: int, requests: int) -> dict:
    return {"type": "token", "index": index, "batch": {"step": step, "rows": rows, "requests": requests}}


def test_the_step_log_follows_lanes_joining_sharing_steps_and_freeing_slots() -> None:
    events = [
        (1, started([0])),
        (1, token(0, 10, 1, 1)),
        (2, started([1, 2])),  # n = 2: two rows
        (1, token(1, 11, 3, 2)),
        (2, token(0, 11, 3, 2)),
        (2, {"type": "token", "index": 0, "sample": 1, "batch": {"step": 11, "rows": 3, "requests": 2}}),
        (1, {"type": "done"}),
        (2, token(1, 12, 2, 1)),
    ]
    out = run_js(STEP_LOG, {"events": events})
    assert out["reported"] is True
    assert out["columns"] == [10, 11, 12] and out["latest"] == 12
    assert out["peakRows"] == 3 and out["maxBatch"] == 4
    assert out["laneSteps"] == {"1": [10, 11], "2": [11, 12]}  # a step counted once per lane, samples or not
    assert out["stepLanes"] == {"10": [1], "11": [1, 2], "12": [2]}
    assert out["slots"]["1"] == {"slots": [0], "ended": True, "freedAfter": 11}
    assert out["held"] == {"1": 2, "2": 2}  # lane 2 still holds slots 1 and 2; slot 0 is free


def test_events_without_a_batch_field_leave_the_log_empty() -> None:
    events = [(1, {"type": "started"}), (1, {"type": "token", "index": 0}), (1, {"type": "done"})]
    out = run_js(STEP_LOG, {"events": events})
    assert out["reported"] is False and out["columns"] == [] and out["maxBatch"] is None and out["held"] == {}


DESCRIBE = f"""
const {{ describeLoad }} = await import("{module_url("playground/js/load-indicator.js")}");
console.log(JSON.stringify(INPUT.map((doc) => describeLoad(doc))));
"""


def test_the_load_sentence_reads_the_server_document() -> None:
    one = load.summarize([{"host": "a", "pid": 1, "load": {"running": 1, "rows": 2, "waiting": 0, "max_batch": 8}}], 1.0)
    two = load.summarize(
        [
            {"host": "a", "pid": 1, "load": {"running": 3, "rows": 5, "waiting": 2, "max_batch": 8}},
            {"host": "b", "pid": 2, "load": {"running": 0, "rows": 0, "waiting": 0, "max_batch": 8}},
        ],
        1.0,
    )
    none = load.summarize([{"host": "a", "pid": 1}], 1.0)
    assert run_js(DESCRIBE, [one, two, none, None]) == [
        "Worker load: 1 stream decoding (2 of 8 batch rows in use), 0 waiting.",
        "Worker load: 3 streams decoding (5 of 16 batch rows in use), 2 waiting across 2 workers.",
        None,
        None,
    ]


FREED = (
    REPLAY
    + f"""
const {{ freedText }} = await import("{module_url("playground/js/batch-slots.js")}");
console.log(JSON.stringify([...log.slots].map(([lane, s]) => freedText({{ lane, after: s.freedAfter }}))));
"""
)


def test_a_freed_slot_says_which_lane_left_it_and_after_which_step() -> None:
    events = [(1, started([0])), (1, token(0, 41, 1, 1)), (1, {"type": "done"}), (2, started([1])), (2, {"type": "error"})]
    assert run_js(FREED, {"events": events}) == ["freed by lane 1 after step 41", "freed by lane 2"]  # lane 2 ended before a step
