"""The live comparison's settings (static/runs/js/live-settings.js, run in Node) with a chat
conversation: the address written for a saved chat run ("Run these settings again, live") reads
back into settings whose every column sends the run's messages, which the frame parser accepts as
that conversation; the settings write the same address again."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlencode

from playground.edge import frames
from playground.edge.param_facts import live_fields
from playground.runs.address import turns_text
from tests.js import module_url, run_js

LIVE = f"""
    // the page's json_script of the server's live fields, as live-fields.js reads it
    globalThis.document = {{ getElementById: () => ({{ textContent: JSON.stringify(INPUT.fields) }}) }};
    const live = await import("{module_url("runs/js/live-settings.js")}");
    const results = INPUT.queries.map((query) => {{
      const settings = live.settingsFromQuery(query);
      return {{ settings, bodies: live.generateBodies(settings), again: live.settingsToQuery(settings) }};
    }});
    console.log(JSON.stringify(results));
"""
TURNS = [{"role": "user", "content": "Capital of France?"}, {"role": "assistant", "content": 'Paris & "so"\n'}]


def query(**texts: str) -> str:
    return urlencode({"mode": "chat", "seed": "7", "columns": "2", "c2.temperature": "1.5", **texts})


def test_a_conversation_in_the_address_is_sent_by_every_column():
    with_turns = query(prompt="And of Italy?", system="Be brief.", turns=turns_text(TURNS), assistant_prefix="It is")
    without = query(prompt="Hi", system="Be brief.")
    results = run_js(LIVE, {"fields": live_fields(), "queries": [with_turns, without]})

    conversation = results[0]
    assert conversation["settings"]["turns"] == TURNS and conversation["settings"]["assistant_prefix"] == "It is"
    expected = [{"role": "system", "content": "Be brief."}, *TURNS, {"role": "user", "content": "And of Italy?"}]
    expected.append({"role": "assistant", "content": "It is"})
    for entry in conversation["bodies"]:
        body = entry["body"]
        assert "prompt" not in body and "system" not in body
        job = frames.parse_client_frame(json.dumps({"type": "generate", "request_id": "l", **body}))
        assert job.request.chat.to_list() == expected and job.request.chat.continue_final_message is True
    assert parse_qs(conversation["again"]) == parse_qs(with_turns)

    single = results[1]
    assert single["settings"]["turns"] == [] and single["settings"]["assistant_prefix"] == ""
    for entry in single["bodies"]:
        assert (entry["body"]["prompt"], entry["body"]["system"]) == ("Hi", "Be brief.") and "messages" not in entry["body"]
    assert parse_qs(single["again"]) == parse_qs(without)


def test_each_column_names_its_model_in_the_address_and_its_body():
    both = urlencode(
        {"prompt": "The capital of France is", "mode": "completion", "seed": "5", "columns": "2"}
        | {"c1.model": "smollm2-135m-instruct", "c2.model": "gemma-3-270m"}
    )
    one = urlencode({"prompt": "Hi", "mode": "completion", "seed": "5", "columns": "2", "c2.model": "gemma-3-270m"})
    results = run_js(LIVE, {"fields": live_fields(), "queries": [both, one]})

    assert [c["model"] for c in results[0]["settings"]["columns"]] == ["smollm2-135m-instruct", "gemma-3-270m"]
    assert [e["body"]["model"] for e in results[0]["bodies"]] == ["smollm2-135m-instruct", "gemma-3-270m"]
    assert parse_qs(results[0]["again"]) == parse_qs(both)
    # an empty model is left out of the body: the server's default runs it
    assert "model" not in results[1]["bodies"][0]["body"] and results[1]["bodies"][1]["body"]["model"] == "gemma-3-270m"
    assert parse_qs(results[1]["again"]) == parse_qs(one)
