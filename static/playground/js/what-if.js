// What-if: sliders for temperature and the truncation stages reshape the selected step's real
// distribution. Each move sends an `inspect` for that position with the changed parameters (the
// server answers from the model's real logits); the bars show raw versus what-if final
// probability, which stage removed each token, and what each stage kept. Only the latest answer
// is drawn. "Continue from here with these settings" starts a branch at this step.

import { alternativeRow } from "../../shared/js/alternative-row.js";
import { el } from "../../shared/js/dom.js";
import { formatProb, quoteToken } from "../../shared/js/format.js";
import { PARAM_BY_KEY, WHAT_IF } from "./params-schema.js";
import { inspectBase, samplingParams } from "./step-context.js";
import { inWords } from "./field-names.js";

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
      // The slider covers the usual range; the number box beside it takes any value (the run's
      // own, however far out) and is what is sent. The slider's range grows to include it.
      const input = document.createElement("input");
      input.type = "range";
      input.id = id;
      input.min = String(spec.min);
      input.max = String(spec.max);
      input.step = String(spec.step);
      input.dataset.key = spec.key;
      const box = document.createElement("input");
      box.type = "number";
      box.id = `${id}-value`;
      box.className = "slider-number";
      box.step = "any";
      box.min = String(spec.min);
      box.inputMode = "decimal";
      box.setAttribute("aria-label", `What-if ${spec.label}, exact value`);
      box.dataset.key = spec.key;
      const output = document.createElement("output");
      output.htmlFor = id;
      output.className = "slider-value";
      const slider = { input, box, output, spec };
      input.addEventListener("input", () => {
        this.#setValue(slider, Number(input.value), { fromSlider: true });
        this.#schedule();
      });
      box.addEventListener("input", () => {
        const value = Number(box.value);
        if (box.value === "" || !Number.isFinite(value)) return; // empty or not a number yet: keep typing
        this.#setValue(slider, value, { fromBox: true });
        this.#schedule();
      });
      field.append(label, input, box, output);
      form.append(field);
      this.sliders[spec.key] = slider;
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
    if (spec.key === "temperature" && value === 0) return "0 (greedy)";
    return value === PARAM_BY_KEY[spec.key]?.off && spec.key !== "temperature" ? `${value} (off)` : String(value);
  }

  /** Sets one dial to exactly `value`: kept as the value to send, shown in the number box, and on
   *  the slider, whose range grows to include it (a range input would clamp it otherwise). */
  #setValue(slider, value, { fromSlider = false, fromBox = false } = {}) {
    const { input, box, output, spec } = slider;
    slider.value = value;
    if (!fromSlider) {
      input.min = String(Math.min(spec.min, value));
      input.max = String(Math.max(spec.max, value));
      input.value = String(value);
    }
    if (!fromBox) box.value = String(value);
    output.textContent = this.#describe(spec, value);
  }

  #setSliders(params) {
    for (const slider of Object.values(this.sliders)) {
      const { spec } = slider;
      const value = params[spec.key] ?? PARAM_BY_KEY[spec.key]?.off ?? spec.min;
      // Back to the usual range first: a previous run's value may have widened it.
      slider.input.min = String(spec.min);
      slider.input.max = String(spec.max);
      this.#setValue(slider, Number(value));
    }
  }

  /** The run's sampling parameters with the dials' exact values. */
  params() {
    const params = samplingParams(this.run);
    for (const { value, spec } of Object.values(this.sliders)) params[spec.key] = value;
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
      this.status.textContent = `What-if unavailable: ${inWords(error.message, error.param)}`;
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
      body.append(alternativeRow(alt, chosen && alt.id === chosen.id ? "✓ chosen in the run" : null));
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
