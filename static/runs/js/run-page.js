// /r/<id>: a saved run drawn from the page's embedded JSON with the playground's own token,
// colour and inspector modules; Replay, pick-for-comparison and delete.

import { renderLegend } from "../../shared/js/colors.js";
import { knowSpecialIds, quoteToken } from "../../shared/js/format.js";
import { inspectedStream } from "../../shared/js/inspected-stream.js";
import { Inspector } from "../../shared/js/inspector.js";
import { PromptSurprisalView } from "../../shared/js/prompt-surprisal.js";
import { parseJson } from "../../shared/js/seeds.js";
import { TintSwitch, renderEntropyLegend } from "../../shared/js/tint-mode.js";
import { showGrammar } from "./grammar-view.js";
import { replay } from "./replay.js";
import { deleteToken, describeError, forgetRun, picked, postJson, rememberRun, setPicked } from "../../shared/js/store.js";
import { drawStrip } from "./strip.js";
import { VerificationView } from "../../shared/js/verification-view.js";

const root = document.querySelector(".saved-run");
const run = parseJson(document.getElementById("run-data").textContent); // seeds exact, as everywhere
const seed = root.dataset.seed; // exact: JSON numbers above 2^53 would lose digits
rememberRun(run.id);

// Output: sample 0's tokens, as the playground shows a live run.
renderLegend(document.getElementById("legend"));
const tokens = run.tokens.filter((t) => (t.sample ?? 0) === 0); // each with its `origin` (older runs': the server derives it)
const byIndex = new Map(tokens.map((t) => [t.index, t]));
const inspector = new Inspector(document.getElementById("inspector"));
const output = document.getElementById("output");
const { stream } = inspectedStream(output, inspector, (i) => byIndex.get(i) ?? null);
knowSpecialIds(run.model?.id ?? null, JSON.parse(document.getElementById("special-ids")?.textContent || "[]"));
stream.model = run.model?.id ?? null; // its special tokens labelled by id, as the playground does
for (const token of tokens) stream.append(token);
if (run.result.tail) {
  const tail = document.createElement("span");
  tail.className = "tail";
  tail.textContent = run.result.tail;
  output.append(tail);
}
drawStrip(document.querySelector("[data-testid=strip]"), tokens, (i) => stream.elements[i]?.focus());
showGrammar(root.querySelector("[data-grammar-view]"), run.request.params.grammar ?? null, run.result.text ?? "", run.result.reason);

// A speculative run (`run.speculative`: its totals and verification events; null otherwise): the
// steps and totals, as the playground showed them live.
new VerificationView(document.getElementById("speculative-section"))
  .show(run.speculative?.verifications ?? [], run.speculative?.totals ?? null, run.speculative);

// The prompt's surprisal, when the run asked for it (null in runs saved before it existed), and the tint switch.
const promptView = new PromptSurprisalView(document.getElementById("prompt-surprisal"));
promptView.show(run.prompt_surprisal ?? null);
const probabilityLegend = document.getElementById("legend");
probabilityLegend.dataset.tintLegend = "probability";
const entropyLegend = document.querySelector("[data-tint-legend=entropy]");
renderEntropyLegend(entropyLegend);
new TintSwitch(document.querySelector("[data-tint-switch]"), [output, promptView.output], [probabilityLegend, entropyLegend]);

// Actions.
const status = root.querySelector("[data-testid=replay-result]");
const replayButton = root.querySelector("[data-action=replay]");
replayButton.addEventListener("click", async () => {
  replayButton.disabled = true;
  status.textContent = "Replaying with seed " + seed + "…";
  try {
    const { result, done } = await replay(run, seed, (n) => { status.textContent = `Replaying… ${n} tokens`; });
    if (done.run_id) rememberRun(done.run_id, done.delete_token);
    status.replaceChildren();
    if (result.identical) {
      status.append("Replay: identical.");
      status.dataset.result = "identical";
    } else if ("beam" in result) {
      status.append(`Replay: ${beamDifference(result)}.`);
      status.dataset.result = "differs";
    } else {
      const where = result.sample ? `sample ${result.sample}, position ${result.position + 1}` : `position ${result.position + 1}`; // from 1
      const expected = result.expected ? quoteToken(result.expected.token) : "nothing";
      const got = result.got ? quoteToken(result.got.token) : "nothing";
      status.append(`Replay: differs first at ${where}: saved ${expected}, replay ${got}.`);
      status.dataset.result = "differs";
    }
    if (done.run_id) {
      const link = document.createElement("a");
      link.href = `/compare/${run.id},${done.run_id}`;
      link.textContent = "Compare with the replay";
      status.append(" ", link);
    }
  } catch (error) {
    status.textContent = `Replay failed: ${error.message}`;
    status.dataset.result = "error";
  } finally {
    replayButton.disabled = false;
  }
});

/** Where a beam-search replay first differs, in words (beams are numbered from 1, best first). */
function beamDifference({ beam, position, expected, got }) {
  if (position === null) {
    return expected ? `the replay has no beam ${beam + 1} (the saved run has ${beam + 1} or more)`
      : `the replay has a beam ${beam + 1} that the saved run does not`;
  }
  const id = (value) => (value === null ? "nothing" : `token id ${value}`);
  return `beam ${beam + 1} differs first at position ${position + 1}: saved ${id(expected)}, replay ${id(got)}`;
}

const pick = root.querySelector("[data-action=pick]");
const comparePicked = root.querySelector("[data-action=compare-picked]");
function showPicked() {
  const ids = picked();
  pick.setAttribute("aria-pressed", String(ids.includes(run.id)));
  pick.textContent = ids.includes(run.id) ? `Picked (${ids.length} of 2–4)` : "Pick for comparison";
  comparePicked.hidden = ids.length < 2;
  comparePicked.href = `/compare/${ids.join(",")}`;
}
pick.addEventListener("click", () => {
  const ids = picked();
  setPicked(ids.includes(run.id) ? ids.filter((i) => i !== run.id) : [...ids, run.id].slice(-4));
  showPicked();
});
showPicked();

const del = root.querySelector("[data-action=delete]");
const token = deleteToken(run.id);
del.hidden = !token;
del.addEventListener("click", async () => {
  if (!window.confirm("Delete this run for everyone who has its link?")) return;
  const { status: code, body } = await postJson(`/api/runs/${run.id}/delete`, { delete_token: token });
  if (code === 204) {
    forgetRun(run.id);
    status.textContent = "Deleted.";
    window.location.assign("/history");
  } else {
    status.textContent = `Could not delete: ${describeError(body, `HTTP ${code}`)}`;
  }
});
