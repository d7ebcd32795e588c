// What-if: sliders for temperature and the truncation stages reshape the selected step's real
// distribution. Each move sends an `inspect` for that position with the changed parameters (the
// server answers from the model's real logits); the bars show raw versus what-if final
// probability, which stage removed each token, and what each stage kept. Only the latest answer
// is drawn. "Continue from here with these settings" starts a branch at this step.

import { formatProb, quoteToken } from "./format.js";
import { WHAT_IF } from "./params-schema.js";
import { inspectBase, samplingParams } from "./step-context.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function barCell(kind, p) {
  const cell = el("td", `num ${kind}`);
  const track = el("span", "bar");
  const fill = el("span", `fill ${kind}`);
  fill.style.width = `${Math.max(0, Math.min(1, p)) * 100}%`;
  track.append(fill);
  cell.append(track, el("span", "value", formatProb(p)));
  return cell;
}

export class WhatIf {
  /** @param inspect  body → Promise<inspection>; @param onContinue  (run, index, params) → void */
  constructor(root, inspect, onContinue) {
    this.root = root;
    this.inspect = inspect;
    this.onContinue = onContinue;
    this.run = null;
    this.index = null;
    this.sequence = 0;
    this.timer = 0;
    this.sliders = {};
    this.#build();
  }

  #build() {
    const form = el("div", "what-if-sliders");
    for (const spec of WHAT_IF) {
      const id = `what-if-${spec.key.replaceAll("_", "-")}`;
      const field = el("div", "slider-field");
      const label = el("label");
      label.htmlFor = id;
      label.append(el("span", "sr-only", "What-if "), spec.label);
      const input = document.createElement("input");
      input.type = "range";
      input.id = id;
      input.min = String(spec.min);
      input.max = String(spec.max);
      input.step = String(spec.step);
      input.dataset.key = spec.key;
      const output = document.createElement("output");
      output.htmlFor = id;
      output.className = "slider-value";
      input.addEventListener("input", () => {
        output.textContent = this.#describe(spec, Number(input.value));
        this.#schedule();
      });
      field.append(label, input, output);
      form.append(field);
      this.sliders[spec.key] = { input, output, spec };
    }
    const actions = el("div", "what-if-actions");
    this.resetButton = el("button", null, "Back to the run's settings");
    this.resetButton.type = "button";
    this.resetButton.addEventListener("click", () => {
      this.#setSliders(samplingParams(this.run));
      this.#schedule(0);
    });
    this.continueButton = el("button", "primary", "Continue from here with these settings");
    this.continueButton.type = "button";
    this.continueButton.dataset.whileIdle = "";
    this.continueButton.addEventListener("click", () => {
      if (this.run) this.onContinue(this.run, this.index, this.params());
    });
    actions.append(this.resetButton, this.continueButton);
    this.status = el("p", "hint what-if-status");
    this.status.setAttribute("role", "status");
    this.result = el("div", "what-if-result");
    this.root.replaceChildren(form, actions, this.status, this.result);
  }

  #describe(spec, value) {
    const offs = { temperature: null, top_k: 0, top_p: 1, min_p: 0, typical_p: 1, top_n_sigma: 0, epsilon_cutoff: 0, eta_cutoff: 0 };
    if (spec.key === "temperature" && value === 0) return "0 (greedy)";
    return value === offs[spec.key] ? `${value} (off)` : String(value);
  }

  #setSliders(params) {
    const defaults = { temperature: 1, top_k: 0, top_p: 1, min_p: 0, typical_p: 1, top_n_sigma: 0, epsilon_cutoff: 0, eta_cutoff: 0 };
    for (const { input, output, spec } of Object.values(this.sliders)) {
      const value = params[spec.key] ?? defaults[spec.key];
      input.value = String(value);
      output.textContent = this.#describe(spec, Number(input.value));
    }
  }

  /** The run's sampling parameters with the sliders' values. */
  params() {
    const params = samplingParams(this.run);
    for (const { input, spec } of Object.values(this.sliders)) params[spec.key] = Number(input.value);
    return params;
  }

  /** Shows step `index` of `run` with the run's own settings. */
  show(run, index) {
    this.run = run;
    this.index = index;
    this.#setSliders(samplingParams(run));
    this.#schedule(0);
  }

  clear() {
    this.run = null;
    this.index = null;
    this.sequence++;
    this.result.replaceChildren();
    this.status.textContent = "";
  }

  #schedule(delay = 60) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.#fetch(), delay);
  }

  async #fetch() {
    if (!this.run) return;
    const ticket = ++this.sequence;
    const body = { ...inspectBase(this.run, this.index, 10), params: this.params() };
    this.root.dataset.state = "loading";
    try {
      const inspection = await this.inspect(body);
      if (ticket !== this.sequence) return; // a newer slider position is on its way
      this.#render(inspection.traces[0], inspection);
      this.root.dataset.state = "ready";
      this.root.dataset.sequence = String(ticket);
    } catch (error) {
      if (ticket !== this.sequence) return;
      this.root.dataset.state = "error";
      this.status.textContent = `What-if unavailable: ${error.message}`;
    }
  }

  #render(trace, inspection) {
    const chosen = this.run.token(this.index);
    this.status.textContent = `Step ${inspection.position + 1}: entropy ${trace.entropy.before.toFixed(2)} → ` +
      `${trace.entropy.after.toFixed(2)} nats with these settings.`;
    const table = el("table", "alternatives what-if-table");
    table.append(el("caption", null, "The real distribution at this step: model (raw) and with the what-if settings (final)"));
    const head = el("tr");
    for (const [text, cls] of [["Token", "tok"], ["Model (raw)", "num raw"], ["What-if (final)", "num final"]]) {
      const th = el("th", cls, text);
      th.scope = "col";
      head.append(th);
    }
    const thead = el("thead");
    thead.append(head);
    const body = el("tbody");
    for (const alt of trace.alternatives) {
      const row = el("tr");
      row.dataset.id = String(alt.id);
      row.dataset.rawProb = String(alt.raw_prob);
      row.dataset.prob = String(alt.prob);
      const name = el("th", "tok");
      name.scope = "row";
      name.append(el("code", "token-text", quoteToken(alt.token)));
      if (chosen && alt.id === chosen.id) {
        row.classList.add("chosen");
        name.append(el("span", "chosen-mark", "✓ chosen in the run"));
      }
      const final = barCell("final", alt.prob);
      if (alt.removed_by) final.append(el("span", "removed-by", `removed by ${alt.removed_by}`));
      row.append(name, barCell("raw", alt.raw_prob), final);
      body.append(row);
    }
    table.append(thead, body);
    const details = el("dl", "step-details");
    details.append(el("dt", null, "Kept by each stage"),
      el("dd", "stages-kept", trace.stages.map((s) => `${s.name}: ${s.kept}`).join(", ") || "no stage is on: the final distribution is the raw one"));
    if (trace.top_final?.length) {
      details.append(el("dt", null, "Most likely after all stages"),
        el("dd", "top-final", trace.top_final.slice(0, 5).map((t) => `${quoteToken(t.token)} ${formatProb(t.prob)}`).join(", ")));
    }
    this.result.replaceChildren(table, details);
  }
}
