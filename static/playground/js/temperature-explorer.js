// The temperature explorer: the selected step's real distribution at T = 0.1, 0.5, 1, 1.5 and 2
// side by side (temperature alone, every other stage off), as in the seed texts' table "Effect of
// Temperature on Token Probabilities" (T=0.1, 0.5, 1.0, 1.5, 2.0). One
// `inspect` with five variants; rows are the step's most likely tokens, and the last rows give
// how many times likelier the top token is than the second, and the entropy.

import { barCell, el } from "../../shared/js/dom.js";
import { quoteToken, timesText } from "../../shared/js/format.js";
import { EXPLORER_TEMPERATURES } from "./params-schema.js";
import { inspectBase } from "./step-context.js";
import { inWords } from "./field-names.js";

const ROWS = 6;

export class TemperatureExplorer {
  constructor(root, inspect) {
    this.root = root;
    this.inspect = inspect;
    this.sequence = 0;
  }

  clear() {
    this.sequence++;
    this.root.replaceChildren();
  }

  async show(run, index) {
    const ticket = ++this.sequence;
    const body = {
      ...inspectBase(run, index, ROWS),
      params: { temperature: 1 },
      variants: EXPLORER_TEMPERATURES.map((t) => ({ temperature: t })),
    };
    this.root.dataset.state = "loading";
    try {
      const inspection = await this.inspect(body);
      if (ticket !== this.sequence) return;
      this.#render(inspection.traces, run.token(index));
      this.root.dataset.state = "ready";
    } catch (error) {
      if (ticket !== this.sequence) return;
      this.root.dataset.state = "error";
      this.root.replaceChildren(el("p", "hint", `Temperature explorer unavailable: ${inWords(error.message, error.param)}`));
    }
  }

  #render(traces, chosen) {
    const table = el("table", "explorer");
    table.append(el("caption", null, "This step at five temperatures (temperature alone), from the model's real logits"));
    const head = el("tr");
    const corner = el("th", null, "Token");
    corner.scope = "col";
    head.append(corner);
    for (const t of EXPLORER_TEMPERATURES) {
      const th = el("th", "num", `T = ${t}`);
      th.scope = "col";
      head.append(th);
    }
    const thead = el("thead");
    thead.append(head);
    const body = el("tbody");
    const rows = traces[0]?.alternatives ?? [];
    for (const alt of rows) {
      const row = el("tr");
      row.dataset.id = String(alt.id);
      const name = el("th", "tok");
      name.scope = "row";
      name.append(el("code", "token-text", quoteToken(alt.token)));
      if (chosen && alt.id === chosen.id) name.append(el("span", "chosen-mark", "✓ chosen"));
      row.append(name);
      traces.forEach((trace, i) => {
        const found = trace.alternatives.find((a) => a.id === alt.id);
        const p = found ? found.prob : 0;
        const cell = barCell("final", p, { cellClass: "num" });
        cell.dataset.temperature = String(EXPLORER_TEMPERATURES[i]);
        cell.dataset.prob = String(p);
        row.append(cell);
      });
      body.append(row);
    }
    const ratio = el("tr", "ratio");
    const ratioHead = el("th", null, "Top ÷ second (times as likely)");
    ratioHead.scope = "row";
    ratio.append(ratioHead);
    const entropy = el("tr", "entropy");
    const entropyHead = el("th", null, "Entropy (nats)");
    entropyHead.scope = "row";
    entropy.append(entropyHead);
    for (const trace of traces) {
      const sorted = [...trace.alternatives].sort((a, b) => b.prob - a.prob);
      const r = sorted.length > 1 && sorted[1].prob > 0 ? sorted[0].prob / sorted[1].prob : Infinity;
      const cell = el("td", "num", timesText(r)); // in words past ten thousand ("31 trillion×"), not 14 digits
      if (Number.isFinite(r)) cell.title = `${r.toLocaleString("en", { maximumFractionDigits: 1 })} times as likely`;
      ratio.append(cell);
      entropy.append(el("td", "num", trace.entropy.after.toFixed(2)));
    }
    body.append(ratio, entropy);
    table.append(thead, body);
    const note = el("p", "hint",
      "Lower T divides the logits by less than 1, widening their gaps: the top token takes nearly everything. " +
      "Higher T narrows the gaps and flattens the distribution, so the entropy rises.");
    this.root.replaceChildren(table, note);
  }
}
