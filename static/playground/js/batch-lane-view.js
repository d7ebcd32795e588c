// One lane of the batch view: its prompt, its state (waiting, in line, decoding, done, failed), its
// slot in the worker's batch, its numbers and its tokens, streamed as on the main page
// (stream.js: tinted by probability, one tab stop, arrow keys; the inspector shows a token's
// alternatives). Reads its run (run.js); keeps no numbers of its own.

import { el } from "../../shared/js/dom.js";
import { describeLoading, describeQueued, describeReason, firstTokenWords, formatRate } from "../../shared/js/format.js";
import { TokenStream } from "../../shared/js/stream.js";
import { errorText } from "./field-names.js";

export class LaneView {
  /** @param container  where the lane's card goes; @param n  its number (1-based);
   *  @param handlers  TokenStream callbacks (the inspector controller's, told which lane) */
  constructor(container, n, handlers) {
    this.n = n;
    this.root = el("article", { className: `lane lane-${((n - 1) % 8) + 1}`, "data-lane": n, "data-state": "idle", "aria-labelledby": `lane${n}-title` });
    const head = el("header", "lane-head");
    this.title = el("h3", { id: `lane${n}-title` }, `Lane ${n}`);
    this.prompt = el("span", "lane-prompt");
    this.state = el("span", { className: "lane-state", "data-lane-state": "" }, "not run");
    head.append(this.title, this.prompt, this.state);
    this.numbers = el("dl", "lane-numbers");
    this.fields = {};
    for (const [key, label] of [["tokens", "Tokens"], ["slot", "Slot"], ["ttft", "First token"], ["rate", "Decode"], ["reason", "Ended"]]) {
      const dd = el("dd", { "data-stat": key }, "–");
      this.fields[key] = dd;
      const pair = el("div");
      pair.append(el("dt", null, label), dd);
      this.numbers.append(pair);
    }
    this.output = el("div", { className: "output lane-output", role: "group", "aria-labelledby": `lane${n}-title`, "data-placeholder": "Tokens appear here." });
    this.error = el("p", { className: "field-error lane-error", role: "alert", hidden: true });
    this.root.append(head, this.numbers, this.output, this.error);
    container.append(this.root);
    this.stream = new TokenStream(this.output, handlers);
  }

  #set(key, text) {
    this.fields[key].textContent = text;
  }

  #state(state, text) {
    this.root.dataset.state = state;
    this.state.textContent = text;
  }

  /** A new run of this lane is on its way. */
  reset(promptText) {
    this.stream.clear();
    this.prompt.textContent = promptText;
    this.error.hidden = true;
    this.error.textContent = "";
    for (const key of Object.keys(this.fields)) this.#set(key, "–");
    this.#state("waiting", "waiting for the worker");
  }

  /** Not part of the current run. */
  idle(text) {
    this.stream.clear();
    this.#state("idle", text);
  }

  remove() {
    this.root.remove();
  }

  /** A `queued` event: the lane's place in line (1 = next, as the server counts) and the estimate. */
  queued(event) {
    this.#state("queued", describeQueued(event));
  }

  /** A `loading` event: the lane waits while its model loads. */
  loading(event) {
    this.#state("queued", describeLoading(event));
  }

  started(event) {
    const slots = event.batch?.slots;
    this.#set("slot", Array.isArray(slots) ? slots.join(", ") : "–");
    this.#set("tokens", "0");
    this.#state("streaming", "decoding");
  }

  token(event, count) {
    if ((event.sample ?? 0) === 0) this.stream.append(event);
    this.#set("tokens", String(count));
  }

  done(event) {
    this.stream.appendTail(event.tail);
    const timing = event.timing ?? {};
    this.#set("ttft", firstTokenWords(timing));
    this.#set("rate", formatRate(timing.decode_tokens_per_s));
    this.#set("tokens", String(event.usage?.completion_tokens ?? "–"));
    this.#set("reason", describeReason(event.reason));
    const freed = this.fields.slot.textContent !== "–" ? `; slot ${this.fields.slot.textContent} freed` : "";
    this.#state("done", `done: ${event.reason}${freed}`);
  }

  failed(error) {
    this.error.textContent = errorText(error.message, error.param);
    this.error.hidden = false;
    this.#set("reason", error.code ?? "error");
    this.#state("failed", `failed: ${error.code ?? "error"}`);
  }
}
