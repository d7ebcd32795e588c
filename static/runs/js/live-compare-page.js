// /compare/live: one prompt, 2–4 sets of settings, one seed. Run sends one `generate` per column
// over one websocket (the server queues them in order); the tokens stream into the aligned table;
// each saved run is remembered in this browser's history as it ends, and when all have ended the
// saved comparison's permalink is offered. The address always holds the settings.
// Columns of different models are also drawn aligned on the text (cross-model-view.js): column 1
// beside the first column of another model, with each model's rating of the other's token where
// their texts part. "Base vs instruct" runs the preset for that at once.

import { renderLegend } from "../../shared/js/colors.js";
import { CrossModelView } from "../../shared/js/cross-model-view.js";
import { quoteToken } from "../../shared/js/format.js";
import { servedModels } from "../../shared/js/model-picker.js";
import { GenerateClient } from "../../shared/js/socket.js";
import { errorText } from "../../playground/js/field-names.js";
import { LiveForm } from "./live-form.js";
import { describeColumn, drawSeed, generateBodies, settingsFromQuery, settingsToQuery } from "./live-settings.js";
import { LiveTable } from "./live-table.js";
import { baseVsInstructSettings, grammarDemoSettings } from "./live-presets.js";
import { grammarsToCheck, validityMark } from "./grammar-view.js";
import { rememberRun } from "../../shared/js/store.js";

const form = new LiveForm(document.getElementById("live-form"));
const status = document.querySelector("[data-testid=live-status]");
const divergence = document.querySelector("[data-testid=live-first-divergence]");
const comparisonLink = document.querySelector("[data-testid=comparison-link]");
const table = new LiveTable(document.querySelector("[data-testid=live-aligned]"), showDivergence);
const cross = new CrossModelView(document.querySelector("[data-cross-model]"));
renderLegend(document.getElementById("legend"));

let client = null;
let requestIds = [];
let checks = []; // per column: the grammar its output is checked against and whose it is, or null
let crossPair = null; // [column 1, the first column of another model] as {index, model, label}
let crossFrame = 0;

const fromAddress = settingsFromQuery(window.location.search);
if (fromAddress) form.write(fromAddress);

function writeAddress() {
  window.history.replaceState(null, "", `${window.location.pathname}?${settingsToQuery(form.read())}`);
}
form.form.addEventListener("input", writeAddress);
form.form.addEventListener("change", writeAddress);

function showDivergence(index, tokens) {  const chosen = tokens.map((t, i) => `Settings ${i + 1} ${t ? quoteToken(t.token) : "(stopped)"}`);
  divergence.textContent = `First divergence at position ${index + 1}: ${chosen.join(", ")}. ` + // from 1, as in the inspector
    "The rows after it are greyed: from there each column goes on from its own text, so they compare different situations.";
}

function setStatus(text, state = "") {
  status.textContent = text;
  status.dataset.state = state;
}

/** Runs column i's request; resolves with {done} or {error}, never rejects. */
function runColumn(i, body) {
  return new Promise((resolve) => {
    const fail = (error) => {
      form.showError(i + 1, error.param ?? null, error.message ?? "failed");
      table.status(i, `error (see Settings ${i + 1})`, "error");
      table.failed(i, errorText(error.message ?? "failed", error.param));
      resolve({ error });
    };
    const onEvent = (event) => {
      if (event.run_id) rememberRun(event.run_id, event.delete_token); // from `started` on, so a cut-off run is kept too
      if (event.type === "started") {
        table.status(i, "running", "running");
      } else if (event.type === "token") {
        table.token(i, event);
        if (crossPair?.some((side) => side.index === i)) drawCross();
      } else if (event.type === "done") {
        const count = event.usage?.completion_tokens ?? 0;
        const saved = event.run_id ? "" : `; not saved: ${event.save_error ?? "no run id"}`;
        table.status(i, `${count} tokens, stopped by ${event.reason}${saved}`, "done");
        table.done(i, event);
        markValidity(i, event);
        resolve({ done: event });
      } else if (event.type === "error") {
        fail(event.error ?? { message: "failed" });
      }
    };
    client.generate(body, onEvent).then((id) => requestIds.push(id), (error) => fail({ message: error.message }));
  });
}

/** Column i's header says whether its final text satisfies the grammar it is checked against. */
function markValidity(i, done) {
  const check = checks[i];
  if (!check) return;
  const against = check.from === null ? "" : `Settings ${check.from + 1}'s constraint`;
  document.querySelector(`[data-testid=live-aligned] th[data-column="${i + 1}"]`)
    ?.append(validityMark(check.grammar, done.text ?? "", done.reason, against));
}

async function run() {
  form.clearErrors();
  comparisonLink.hidden = true;
  divergence.textContent = "";
  const drawn = !form.seed;
  if (drawn) form.seed = drawSeed();
  const settings = form.read();
  writeAddress();

  const bodies = generateBodies(settings);
  const bad = bodies.map((entry, i) => [entry.error, i]).filter(([error]) => error);
  if (bad.length) {
    for (const [error, i] of bad) form.showError(i + 1, error.param, error.message);
    setStatus("Not run: fix the marked fields.", "error");
    form.focusFirstError();
    return;
  }

  const n = bodies.length;
  checks = grammarsToCheck(bodies.map(({ body }) => body.params.grammar ?? null));
  const models = settings.columns.map((_, i) => form.model(i + 1));
  const other = models.findIndex((m) => m.id !== models[0].id);
  crossPair = other === -1 ? null : [0, other].map((index) => ({ index, model: models[index].id, label: models[index].label }));
  const columns = settings.columns.map((column, i) => ({ label: `Settings ${i + 1} · ${models[i].label}`, summary: describeColumn(column) }));
  table.start(columns, { byPosition: !crossPair });
  cross.hide(); // the last runs' rows and ratings go
  if (crossPair) cross.show(crossSides());
  setStatus(`Running ${n} sets of settings with seed ${settings.seed.trim()}${drawn ? " (drawn at random)" : ""}…`);
  form.setRunning(true);
  client ??= new GenerateClient();
  requestIds = [];
  const results = await Promise.all(bodies.map(({ body }, i) => runColumn(i, body)));
  form.setRunning(false);
  requestIds = [];
  table.finish();
  const ran = results.filter((r) => r.done).length;
  if (table.firstDivergence === null && ran >= 2 && !crossPair) divergence.textContent = "The columns chose the same token at every position.";
  if (crossPair) {
    const aligned = cross.show(crossSides());
    if (settings.mode === "completion") cross.rate(client, settings.prompt, crossSides(), aligned);
  }

  const ids = results.map((r) => r.done?.run_id).filter(Boolean);
  const missing = results.map((r, i) => (r.done?.run_id ? null : `Settings ${i + 1}`)).filter(Boolean);
  const notSaved = missing.length ? ` Not saved: ${missing.join(", ")} (see the errors).` : "";
  if (ids.length >= 2) {
    comparisonLink.href = `/compare/${ids.join(",")}`;
    comparisonLink.hidden = false;
    setStatus(`Done: ${ids.length} runs saved.${notSaved} The saved comparison adds each position's probabilities and divergence.`,
      missing.length ? "error" : "done");
  } else {
    setStatus(`Done, but fewer than two runs were saved, so there is nothing to compare.${notSaved}`, "error");
  }
}

form.form.addEventListener("submit", (event) => {
  event.preventDefault();
  if (!form.form.querySelector("[data-action=run]").disabled) run();
});
form.form.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    form.form.requestSubmit();
  }
});
// The constrained-decoding demo: one click loads it and runs both columns.
form.form.querySelector("[data-action=demo-grammar]").addEventListener("click", () => {
  form.write(grammarDemoSettings());
  writeAddress();
  form.form.requestSubmit();
});
/** The two columns drawn aligned on the text, with their tokens so far. */
function crossSides() {
  return crossPair.map(({ index, model, label }) => ({ model, label, tokens: table.columns[index].tokens.filter(Boolean) }));
}

function drawCross() {
  if (crossFrame) return;
  crossFrame = requestAnimationFrame(() => {
    crossFrame = 0;
    if (crossPair) cross.show(crossSides());
  });
}

/** The preset: a question to an instruct model (column 1) and a base model (column 2), greedy,
 *  run at once (live-presets.js). */
form.form.querySelector("[data-action=base-vs-instruct]").addEventListener("click", async () => {
  const { models } = await servedModels().catch(() => ({ models: [] }));
  const settings = baseVsInstructSettings(models);
  if (!settings) {
    setStatus("This server does not serve both a base and an instruct model.", "error");
    return;
  }
  form.write(settings);
  writeAddress();
  form.form.requestSubmit();
});

form.form.querySelector("[data-action=stop]").addEventListener("click", () => {
  for (const id of requestIds) client.cancel(id);
  setStatus("Stopping… what was generated is kept and saved.");
});
