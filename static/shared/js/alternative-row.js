// One alternative token as a table row, shared by the inspector and the what-if panel: the token
// as the row header (marked when it is the chosen one), its raw and final probability as bars,
// and the stage that removed it.

import { barCell, el } from "./dom.js";
import { quoteToken } from "./format.js";

/** A <tr> for `alt` ({id, token, raw_prob, prob, removed_by}); `chosenText` marks the chosen row;
 *  `final: false` leaves out the final probability (a prompt token's: nothing was sampled). */
export function alternativeRow(alt, chosenText = null, { final: withFinal = true } = {}) {
  const row = el("tr");
  row.dataset.id = String(alt.id);
  row.dataset.rawProb = String(alt.raw_prob);
  row.dataset.prob = String(alt.prob);
  const name = el("th", "tok");
  name.scope = "row";
  name.append(el("code", "token-text", quoteToken(alt.token)));
  if (chosenText) {
    row.classList.add("chosen");
    name.append(el("span", "chosen-mark", chosenText));
  }
  row.append(name, barCell("raw", alt.raw_prob));
  if (!withFinal) return row;
  const final = barCell("final", alt.prob);
  if (alt.removed_by) final.append(el("span", "removed-by", `removed by ${alt.removed_by}`));
  row.append(final);
  return row;
}
