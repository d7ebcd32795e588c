// The run's numbers and status line: seed used, time to first token, tokens/s, token count, why it
// stopped, and the model that ran. The status line is an aria-live region; it announces state
// changes, not every token.

import { describeLoading, describeQueued, describeReason, firstTokenWords, formatRate } from "../../shared/js/format.js";
import { servedModels } from "../../shared/js/model-picker.js";
import { findModel, modelLabel } from "../../shared/js/models.js";

export class RunStats {
  constructor(root, statusEl) {
    this.root = root;
    this.statusEl = statusEl;
    this.fields = Object.fromEntries([...root.querySelectorAll("[data-stat]")].map((n) => [n.dataset.stat, n]));
    this.models = []; // the served models, for each one's display name (the picker's list: one fetch)
    servedModels().then(({ models }) => { this.models = models; }, () => {});
  }

  #set(name, text) {
    if (this.fields[name]) this.fields[name].textContent = text;
  }

  status(text, state) {
    this.statusEl.textContent = text;
    this.statusEl.dataset.state = state;
  }

  reset() {
    for (const name of Object.keys(this.fields)) this.#set(name, "–");
    delete this.fields.reason?.dataset.reason;
  }

  waiting() {
    this.reset();
    this.status("Waiting for the model…", "waiting");
  }

  /** A `queued` event: the run waits for a worker's room; its place in line and the estimate. */
  queued(event) {
    this.status(describeQueued(event), "waiting");
  }

  /** A `loading` event: the run waits while its model loads (the first run of it on this server). */
  loading(event) {
    this.status(describeLoading(event), "waiting");
  }

  started(event, requestedSeed) {
    const drawn = requestedSeed === null ? " (drawn at random)" : "";
    this.#set("seed", `${event.seed}${drawn}`);
    this.#set("tokens", "0");
    const model = event.model ?? {};
    const name = modelLabel(findModel(this.models, model.id ?? model.name)) || model.name; // one name per model
    const where = [name, model.execution_provider].filter(Boolean).join(" on ");
    this.#set("model", [where, model.kernels].filter(Boolean).join(", "));
    this.status("Generating…", "streaming");
  }

  progress(count) {
    this.#set("tokens", String(count));
  }

  done(event) {
    const timing = event.timing ?? {};
    this.#set("ttft", firstTokenWords(timing));
    this.#set("rate", formatRate(timing.decode_tokens_per_s));
    this.#set("tokens", String(event.usage?.completion_tokens ?? "–"));
    this.#set("reason", describeReason(event.reason));
    if (this.fields.reason) this.fields.reason.dataset.reason = event.reason;
    this.#permalink(event.run_id);
    const stopString = event.stop_string ? ` (“${event.stop_string}”)` : "";
    this.status(`Done: ${describeReason(event.reason)}${stopString}.`, "done");
  }

  /** The saved run's address (`done.run_id`, when the server keeps runs): /r/<id>. */
  #permalink(runId) {
    const slot = this.fields.permalink;
    if (!slot) return;
    if (!runId) {
      slot.textContent = "–";
      return;
    }
    const link = document.createElement("a");
    link.href = `/r/${encodeURIComponent(runId)}`;
    link.textContent = `/r/${runId}`;
    slot.replaceChildren(link);
  }

  failed(message) {
    this.status(`Error: ${message}`, "error");
  }
}
