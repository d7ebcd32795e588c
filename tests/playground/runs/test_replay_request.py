"""The run page's Replay body (static/runs/js/replay.js, run in Node) for a saved run's export: a
chat run's whole conversation goes out as ``messages``, and the server's frame parser reads it back
as the request the run was made with."""

from __future__ import annotations

import json

import pytest

from inference.decoding.loop_params import SpeculativeParams
from playground.edge import frames
from tests.js import module_url, run_js

REPLAY = f"""
    import {{ replayRequest }} from "{module_url("runs/js/replay.js")}";
    console.log(JSON.stringify(INPUT.map(({{ run, seed }}) => replayRequest(run, seed))));
"""
PARAMS = {"temperature": 0.9, "max_tokens": 4, "seed": 123456789}
CONVERSATION = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "Capital of France?"},
    {"role": "assistant", "content": "Paris."},
    {"role": "user", "content": "And of Italy?"},
    {"role": "assistant", "content": "The capital of Italy is"},
]


def export_request(**request):
    base = {"prompt": "Hi", "mode": "chat", "system": None, "messages": None, "continue_final_message": False}
    return {"request": base | {"params": PARAMS, "seed": PARAMS["seed"], "top_n": 3, "use_cache": True} | request}


@pytest.mark.parametrize(
    ("request_fields", "chat", "prompt", "system"),
    [
        ({"prompt": "And of Italy?", "messages": CONVERSATION, "continue_final_message": True}, CONVERSATION, None, None),
        ({"prompt": "Capital of France?", "messages": CONVERSATION[1:2]}, CONVERSATION[1:2], None, None),
        ({"prompt": "Hi", "system": "Be brief."}, None, "Hi", "Be brief."),
        ({"prompt": "Once", "mode": "completion"}, None, "Once", None),
    ],
)
def test_replay_sends_the_request_the_run_was_made_with(request_fields, chat, prompt, system):
    run = export_request(**request_fields)
    (body,) = run_js(REPLAY, [{"run": run, "seed": str(PARAMS["seed"])}])
    assert body["params"]["seed"] == PARAMS["seed"]
    job = frames.parse_client_frame(json.dumps({"type": "generate", "request_id": "r", **body}))
    request = job.request
    if chat is None:
        assert "messages" not in body and request.chat is None
        assert (request.prompt, request.system, request.mode) == (prompt, system, run["request"]["mode"])
    else:
        assert "prompt" not in body and "system" not in body
        assert request.chat.to_list() == chat
        assert request.chat.continue_final_message is run["request"]["continue_final_message"]


def test_replay_keeps_a_speculative_runs_switch_off():
    kept = {"draft": "fast", "k": 3, "switch_off": False}  # a run that kept drafting, as its params were saved
    run = export_request(prompt="Once", mode="completion", params=PARAMS | {"speculative": kept})
    (body,) = run_js(REPLAY, [{"run": run, "seed": str(PARAMS["seed"])}])
    job = frames.parse_client_frame(json.dumps({"type": "generate", "request_id": "r", **body}))
    assert job.request.speculative == SpeculativeParams("fast", 3, switch_off=False)
