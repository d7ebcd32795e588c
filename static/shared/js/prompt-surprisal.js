// How surprising the prompt was: every prompt token tinted by the probability the model gave it
// after the tokens before it, inspectable in the same inspector as output tokens (its alternatives),
// with the prompt's perplexity and total bits. The record comes from a run's `prompt_surprisal`
// events (docs/websocket-api.md), from a saved run (its `prompt_surprisal`), or from a `score`
// frame's `prompt_scores` answer ("Score this text"). Token text goes in with textContent only.

import { inspectedStream } from "./inspected-stream.js";
import { Inspector } from "./inspector.js";
import { promptTokenEvents, summaryText } from "./prompt-surprisal-record.js";

/** The view: a summary line, the tinted tokens and their inspector, inside `root`
 *  ([data-prompt-summary], [data-prompt-stream], [data-prompt-inspector]). */
export class PromptSurprisalView {
  constructor(root) {
    this.root = root;
    this.summary = root.querySelector("[data-prompt-summary]");
    this.output = root.querySelector("[data-prompt-stream]");
    this.tokens = [];
    const inspector = new Inspector(root.querySelector("[data-prompt-inspector]"));
    const { stream, controller } = inspectedStream(this.output, inspector, (i) => this.tokens[i] ?? null);
    this.stream = stream;
    this.controller = controller;
  }

  /** Shows a record (null: hides the view). */
  show(record) {
    this.controller.reset();
    this.stream.clear();
    this.tokens = record ? promptTokenEvents(record) : [];
    this.root.hidden = !record;
    if (!record) return;
    this.summary.textContent = summaryText(record);
    for (const token of this.tokens) this.stream.append(token);
  }
}
