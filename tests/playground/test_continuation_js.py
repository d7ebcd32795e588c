"""The page's step, branch and what-if arithmetic (static/playground/js/continuation.js), run in Node
with the server's facts rendered as the page renders them: what each continuation asks the server."""

from __future__ import annotations

import json

from playground.edge.param_facts import params_schema
from tests.js import module_url, run_js

# The page reads its facts from <script id="param-facts">; Node gets a document with just that.
SCRIPT = f"""
globalThis.document = {{ getElementById: (id) => (id === "param-facts" ? {{ textContent: INPUT.facts }} : null) }};
const {{ branchRun, stepRun, whatIfRun, withLengths }} = await import("{module_url("playground/js/continuation.js")}");
const {{ Run }} = await import("{module_url("playground/js/run.js")}");

function finished(request, ids, {{ seed = "42", runId = "R", reason = "length" }} = {{}}) {{
  const run = new Run(request);
  run.apply({{ type: "started", seed }});
  ids.forEach((id, index) => run.apply({{ type: "token", index, id, raw_prob: 0.5 }}));
  run.apply({{ type: "done", reason, run_id: runId }});
  return run;
}}
const parent = finished({{ prompt: "P", mode: "completion",
  params: {{ temperature: 0.7, seed: null, max_tokens: 10, min_tokens: 4, n: 2 }} }}, [5, 6, 7, 8, 9]);
const branch = branchRun(parent, 2, 99);
const grandchild = branchRun(finished(branch.request, [5, 6, 99, 1]), 3, 50);
const whatIf = whatIfRun(parent, 3, {{ temperature: 1.5 }});
const fresh = stepRun(null, {{ prompt: "P", mode: "completion", params: {{ max_tokens: 3, min_tokens: 3, n: 4 }} }});
const twoTokens = finished({{ prompt: "P", mode: "completion", params: {{ max_tokens: 1, seed: null }} }}, [5, 6]);
const extended = stepRun(twoTokens, {{ prompt: "P", mode: "completion", params: {{ max_tokens: 3, min_tokens: 3, seed: null }} }});
const unsaid = stepRun(null, {{ prompt: "P", mode: "completion", params: {{}} }});
const ended = stepRun(finished({{ prompt: "P", mode: "completion", params: {{}} }}, [5], {{ reason: "eos" }}),
  {{ prompt: "P", mode: "completion", params: {{}} }});
console.log(JSON.stringify({{
  lengths: [withLengths({{}}, {{ max: 10, min: 4 }}, 3), withLengths({{ min_tokens: 2 }}, {{ max: 10, min: 4 }}, 5, 1)],
  branch: branch.request, grandchild: grandchild.request, whatIf: whatIf.request,
  fresh: {{ extends: fresh.extends, request: fresh.run.request, wanted: fresh.run.wanted }},
  extended: {{ extends: extended.extends, request: extended.run.request }},
  unsaid: unsaid.run.wanted, ended,
}}));
"""


def test_continuations_ask_for_the_whole_texts_length_less_their_prefix():
    schema = params_schema()
    got = run_js(SCRIPT, {"facts": json.dumps(schema)})
    assert got["lengths"] == [{"max_tokens": 7, "min_tokens": 1}, {"max_tokens": 1}]

    # A branch at token 2: the parent's first two ids, the alternative, then 10 − 3 tokens at most.
    branch = got["branch"]
    assert branch["prefix_tokens"] == [5, 6, 99]
    assert branch["params"] == {"temperature": 0.7, "seed": 42, "max_tokens": 7, "min_tokens": 1}
    assert (branch["parent_run"], branch["branch_index"]) == ("R", 2)
    # Its own branch keeps the same whole length: 3 + 7 = 10, less its 4-token prefix.
    assert got["grandchild"]["prefix_tokens"] == [5, 6, 99, 50]
    assert got["grandchild"]["params"]["max_tokens"] == 6 and "min_tokens" not in got["grandchild"]["params"]

    # What-if from token 3: the parent's first three ids, the new dial, the same lengths.
    assert got["whatIf"]["prefix_tokens"] == [5, 6, 7]
    assert got["whatIf"]["params"] == {"temperature": 1.5, "seed": 42, "max_tokens": 7, "min_tokens": 1}

    # A first step: one token, no samples or beams; the form's lengths are kept for the text.
    assert got["fresh"]["extends"] is False
    assert got["fresh"]["request"]["params"] == {"max_tokens": 1, "min_tokens": 1}
    assert got["fresh"]["wanted"] == {"max": 3, "min": 3}
    # The next step forces the two tokens so far, with the first step's seed.
    extended = got["extended"]
    assert extended["extends"] is True and extended["request"]["prefix_tokens"] == [5, 6]
    assert extended["request"]["params"] == {"seed": 42, "max_tokens": 1, "min_tokens": 1}
    # Unset lengths are the server's defaults, read from the facts.
    assert got["unsaid"] == {
        "max": schema["properties"]["max_tokens"]["default"],
        "min": schema["properties"]["min_tokens"]["default"],
    }
    assert got["ended"] == {"ended": True}
