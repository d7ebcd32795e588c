// /compare/<ids>: the table is rendered by the server; this tints each token by the probability
// it was chosen with and adds the compared runs to this browser's history.

import { probColors } from "../../shared/js/colors.js";
import { CrossModelView } from "../../shared/js/cross-model-view.js";
import { servedModels } from "../../shared/js/model-picker.js";
import { findModel, modelLabel } from "../../shared/js/models.js";
import { GenerateClient } from "../../shared/js/socket.js";
import { rememberRun } from "../../shared/js/store.js";

for (const el of document.querySelectorAll(".aligned .token[data-prob]")) {
  const { tint, strong } = probColors(Number(el.dataset.prob));
  el.style.setProperty("--tint", tint);
  el.style.setProperty("--tint-strong", strong);
}
const runs = JSON.parse(document.getElementById("runs-data").textContent);
for (const run of [...runs].reverse()) rememberRun(run.id);

// Runs of different models: run 1 beside the first run of another model, aligned on the text
// (cross-model-view.js), with each model's rating of the other's token where their texts part.
const modelOf = (run) => run.model?.id ?? run.model?.name ?? "";
const otherModel = runs.findIndex((run) => modelOf(run).toLowerCase() !== modelOf(runs[0]).toLowerCase());
if (otherModel !== -1) showAcrossModels([runs[0], runs[otherModel]]);

async function showAcrossModels(pair) {
  document.querySelector("[data-testid=first-divergence]")?.append(
    " The runs are of different models, whose token positions do not line up: see “Across models, aligned on the text”.",
  );
  const { models } = await servedModels().catch(() => ({ models: [] }));
  const sides = pair.map((run) => ({
    model: modelOf(run),
    label: modelLabel(findModel(models, modelOf(run))) || modelOf(run),
    tokens: run.tokens.filter((t) => (t.sample ?? 0) === 0).sort((a, b) => a.index - b.index),
  }));
  const view = new CrossModelView(document.querySelector("[data-cross-model]"));
  const aligned = view.show(sides);
  const request = pair[0].request;
  if (request.mode === "completion" && pair[1].request.prompt === request.prompt && pair[1].request.mode === "completion") {
    view.rate(new GenerateClient(), request.prompt, sides, aligned);
  }
}
