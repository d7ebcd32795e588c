"""Edit and continue's requests (static/playground/js/continuation.js ``editRun``), the typed tokens'
marking (static/shared/js/typed.js, through ``Run``) and the edit field's text and tokenizing
(static/playground/js/edit-continue.js), run in Node with the server's facts as the page has them."""

from __future__ import annotations

import json

from playground.edge.param_facts import params_schema
from tests.js import module_url, run_js

SCRIPT = f"""
globalThis.document = {{ getElementById: (id) => (id === "param-facts" ? {{ textContent: INPUT.facts }} : null) }};
const {{ branchRun, editRun, stepRun }} = await import("{module_url("playground/js/continuation.js")}");
const {{ Run }} = await import("{module_url("playground/js/run.js")}");
const {{ textFrom, typedTokens }} = await import("{module_url("playground/js/edit-continue.js")}");

function finished(request, ids, {{ seed = "42", runId = "R" }} = {{}}) {{
  const run = new Run(request);
  run.apply({{ type: "started", seed }});
  ids.forEach((id, index) => run.apply({{ type: "token", index, id, text: `<${{id}}>`, raw_prob: 0.5, forced: false }}));
  run.apply({{ type: "done", reason: "length", run_id: runId, tail: "!" }});
  return run;
}}
const parent = finished({{ prompt: "P", mode: "completion",
  params: {{ temperature: 0.7, seed: null, max_tokens: 10, min_tokens: 4, n: 2 }} }}, [5, 6, 7, 8, 9]);
const edit = editRun(parent, 2, [70, 71, 72]);
const withForm = editRun(parent, 2, [70], {{ temperature: 1.3, top_k: 5, max_tokens: 99 }});
// The edited run's events: its forced prefix comes back as forced tokens, then sampled ones.
const edited = finished(edit.request, [5, 6, 70, 71, 72, 3], {{ runId: "E" }});
const branchOfEdit = branchRun(edited, 5, 44);
const stepOfEdit = stepRun(edited, {{ prompt: "P", mode: "completion", params: {{ max_tokens: 20, seed: null }} }});
// Tokenizing the edit page by page: a fake answerer of two pages.
const asked = [];
const pages = [{{ tokens: [{{ id: 1 }}, {{ id: 2 }}], next_offset: 2 }}, {{ tokens: [{{ id: 3 }}], next_offset: null }}];
const ids = await typedTokens(async (body) => {{ asked.push(body); return pages[asked.length - 1]; }}, " Lyon, of course");
console.log(JSON.stringify({{
  edit: edit.request, withForm: withForm.request,
  branchOfEdit: branchOfEdit.request, stepOfEdit: stepOfEdit.run.request,
  textFrom: textFrom(parent, 3), asked, ids,
}}));
"""


def run_script() -> dict:
    return run_js(SCRIPT, {"facts": json.dumps(params_schema())})


def test_an_edit_keeps_the_tokens_before_it_and_forces_the_typed_ones_marked():
    got = run_script()
    edit = got["edit"]
    assert edit["prefix_tokens"] == [5, 6, 70, 71, 72]  # two kept, three typed
    assert edit["typed_tokens"] == 3
    assert (edit["parent_run"], edit["branch_index"]) == ("R", 2)
    # The parent's seed and settings; as many new tokens after the edit as the parent had from 2 on.
    assert edit["params"] == {"temperature": 0.7, "seed": 42, "max_tokens": 8, "min_tokens": 2}
    assert "branched" not in edit  # nothing in it was picked as a branch


def test_an_edit_can_take_other_settings_but_keeps_its_length_and_seed():
    params = run_script()["withForm"]["params"]
    assert params == {"temperature": 1.3, "top_k": 5, "seed": 42, "max_tokens": 8, "min_tokens": 2}


def test_branches_and_steps_of_an_edit_do_not_claim_its_typed_tokens():
    got = run_script()
    assert "typed_tokens" not in got["branchOfEdit"] and got["branchOfEdit"]["prefix_tokens"] == [5, 6, 70, 71, 72, 44]
    assert got["branchOfEdit"]["branched"] is True  # its last prefix token is the alternative picked
    assert "typed_tokens" not in got["stepOfEdit"] and "branched" not in got["stepOfEdit"]


def test_the_edit_field_starts_with_the_text_from_the_token_on_and_is_tokenized_alone_page_by_page():
    got = run_script()
    assert got["textFrom"] == "<8><9>!"
    assert got["asked"] == [
        {"text": " Lyon, of course", "mode": "plain", "system": None, "offset": 0},
        {"text": " Lyon, of course", "mode": "plain", "system": None, "offset": 2},
    ]
    assert got["ids"] == [1, 2, 3]
