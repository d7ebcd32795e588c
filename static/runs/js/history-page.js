// /history: this browser's runs (ids kept in localStorage), summarised by the server for exactly
// those ids; search by prompt text, select 2–4 to compare, delete your own, import a file.

import { el } from "../../shared/js/dom.js";
import { servedModels } from "../../shared/js/model-picker.js";
import { findModel, modelLabel } from "../../shared/js/models.js";
import { deleteToken, describeError, forgetRun, listRuns, picked, postJson, rememberRun, setPicked } from "../../shared/js/store.js";

const body = document.querySelector("[data-testid=history] tbody");
const status = document.querySelector("[data-testid=history-status]");
const search = document.getElementById("history-q");
const compareButton = document.querySelector("[data-action=compare]");
// Each cell's column name, from the table's own header: a narrow screen shows the rows as cards,
// each value under its name (runs.css).
const columnNames = [...document.querySelectorAll("[data-testid=history] thead th")].map((th) => th.textContent);
let selected = new Set(picked());
let served = []; // the served models (GET /api/models), for the one name each is shown by

function settingsText(params) {
  const shown = ["temperature", "top_p", "top_k", "min_p", "max_tokens"]
    .filter((k) => k in params)
    .map((k) => `${k} ${params[k]}`);
  return shown.join(", ");
}

async function load() {
  const ids = listRuns().map((r) => r.id);
  if (!ids.length) {
    body.replaceChildren();
    status.textContent = "No runs yet: runs you make in the playground or open by link appear here.";
    return;
  }
  const [{ status: code, body: answer }, models] = await Promise.all([
    postJson("/api/runs/summaries", { ids, q: search.value }),
    servedModels().then(({ models: list }) => list, () => []), // each model's display name
  ]);
  served = models;
  if (code !== 200) {
    status.textContent = `Could not load the history: ${describeError(answer, `HTTP ${code}`)}`;
    return;
  }
  for (const gone of answer.missing) forgetRun(gone); // deleted elsewhere
  selected = new Set([...selected].filter((id) => answer.runs.some((r) => r.id === id) || !answer.missing.includes(id)));
  body.replaceChildren(...answer.runs.map(row));
  status.textContent = search.value
    ? `${answer.runs.length} run(s) whose prompt contains “${search.value}”.`
    : `${answer.runs.length} run(s).`;
  updateSelection();
}

function row(run) {
  const tr = el("tr");
  tr.dataset.runId = run.id;
  const pick = el("input");
  pick.type = "checkbox";
  pick.checked = selected.has(run.id);
  pick.setAttribute("aria-label", `Select run ${run.id} for comparison`);
  pick.addEventListener("change", () => {
    if (pick.checked) selected.add(run.id);
    else selected.delete(run.id);
    updateSelection();
  });
  const selectCell = el("td", { className: "select" });
  selectCell.append(pick);
  const promptCell = el("td");
  const link = el("a", null, run.prompt.length > 80 ? `${run.prompt.slice(0, 80)}…` : run.prompt);
  link.href = run.url;
  promptCell.append(link);
  if (run.turns) promptCell.append(el("span", { className: "muted" }, ` (${run.turns} messages)`));
  const id = run.model_id ?? run.model;
  const model = el("td", { className: "model" }, modelLabel(findModel(served, id)) || id || "–"); // the model that ran it, by its one name
  const mode = el("td", { className: "mode" }, run.mode); // completion or chat
  const output = el("td", null, run.text.length > 80 ? `${run.text.slice(0, 80)}…` : run.text);
  const settings = el("td", null, `${settingsText(run.params)}; seed ${run.seed}; ${run.status}${run.reason ? ` (${run.reason})` : ""}`);
  const saved = el("td", null, new Date(run.created_at).toLocaleString());
  const actions = el("td", { className: "actions" });
  const token = deleteToken(run.id);
  if (token) {
    const del = el("button", null, "Delete");
    del.type = "button";
    del.setAttribute("aria-label", `Delete run ${run.id}`);
    del.addEventListener("click", async () => {
      const { status: code, body: answer } = await postJson(`/api/runs/${run.id}/delete`, { delete_token: token });
      if (code === 204 || code === 404) {
        forgetRun(run.id);
        selected.delete(run.id);
        tr.remove();
        status.textContent = `Deleted run ${run.id}.`;
        updateSelection();
      } else {
        status.textContent = `Could not delete: ${describeError(answer, `HTTP ${code}`)}`;
      }
    });
    actions.append(del);
  } else {
    const forget = el("button", null, "Forget");
    forget.type = "button";
    forget.title = "Remove from this browser's history (only its maker can delete it)";
    forget.addEventListener("click", () => {
      forgetRun(run.id);
      selected.delete(run.id);
      tr.remove();
      updateSelection();
    });
    actions.append(forget);
  }
  tr.append(selectCell, promptCell, model, mode, output, settings, saved, actions);
  for (const [i, cell] of [...tr.children].entries()) cell.dataset.column = columnNames[i];
  return tr;
}

function updateSelection() {
  const ids = [...selected];
  setPicked(ids);
  compareButton.disabled = ids.length < 2 || ids.length > 4;
  document.querySelector("[data-testid=selection-hint]").textContent =
    ids.length > 4 ? "At most 4 runs can be compared." : `${ids.length} selected; select 2 to 4 runs.`;
}

compareButton.addEventListener("click", () => {
  window.location.assign(`/compare/${[...selected].join(",")}`);
});

let timer = 0;
search.addEventListener("input", () => {
  clearTimeout(timer);
  timer = setTimeout(load, 200);
});
search.form.addEventListener("submit", (e) => {
  e.preventDefault();
  load();
});

const importFile = document.getElementById("import-file");
const importResult = document.querySelector("[data-testid=import-result]");
importFile.addEventListener("change", async () => {
  const file = importFile.files[0];
  if (!file) return;
  const text = await file.text();
  const { status: code, body: answer } = await postJson("/api/runs/import", text);
  importResult.replaceChildren();
  if (code !== 201) {
    importResult.textContent = `Not imported: ${describeError(answer, `HTTP ${code}`)}`;
    importResult.dataset.result = "error";
    return;
  }
  for (const created of [...answer.runs].reverse()) rememberRun(created.id, created.delete_token);
  const link = el("a", null, answer.compare_url ? "open the comparison" : "open the run");
  link.href = answer.compare_url ?? answer.runs[0].url;
  importResult.append(`Imported ${answer.runs.length} run(s): `, link);
  if (answer.tree_url && answer.runs.length > 1) {
    const tree = el("a", { "data-action": "open-tree" }, "open the tree");
    tree.href = answer.tree_url;
    importResult.append(answer.compare_url ? " or " : ", ", tree);
  }
  importResult.append(".");
  importResult.dataset.result = "ok";
  importFile.value = "";
  load();
});

load();
