// /compare/<ids>: the table is rendered by the server; this tints each token by the probability
// it was chosen with and adds the compared runs to this browser's history.

import { probColors } from "../../shared/js/colors.js";
import { rememberRun } from "../../shared/js/store.js";

for (const el of document.querySelectorAll(".aligned .token[data-prob]")) {
  const { tint, strong } = probColors(Number(el.dataset.prob));
  el.style.setProperty("--tint", tint);
  el.style.setProperty("--tint-strong", strong);
}
const runs = JSON.parse(document.getElementById("runs-data").textContent);
for (const run of [...runs].reverse()) rememberRun(run.id);
