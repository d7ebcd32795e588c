// The page's prompt-surprisal panel (docs/page.md): each run's `prompt_surprisal` pages gathered
// and shown for the run on screen, "Score this text" (the `score` frame: the pasted text's
// surprisal with no generation), and the tint switch over the output and the prompt tokens.

import { PromptSurprisalView } from "../../shared/js/prompt-surprisal.js";
import { SurprisalPages, recordFromScores, summaryText } from "../../shared/js/prompt-surprisal-record.js";
import { TintSwitch, renderEntropyLegend } from "../../shared/js/tint-mode.js";
import { errorText } from "./field-names.js";

const SCORE_KEYS = ["model", "prompt", "mode", "system", "messages", "continue_final_message", "top_n"]; // what `score` takes of a request

export class PromptPanel {
  /** @param options.client  GenerateClient; @param options.readForm  () → request or null (errors shown);
   *  @param options.stats  RunStats; @param options.busy  () → whether a run is streaming */
  constructor({ client, readForm, stats, busy, output }) {
    const $ = (id) => document.getElementById(id);
    this.view = new PromptSurprisalView($("prompt-surprisal"));
    this.pages = new WeakMap(); // run → SurprisalPages
    this.client = client;
    this.readForm = readForm;
    this.stats = stats;
    this.busy = busy;
    this.scoreButton = document.querySelector("[data-action=score]");
    this.scoreButton.addEventListener("click", () => this.score());
    $("legend").dataset.tintLegend = "probability";
    const entropyLegend = document.querySelector("[data-tint-legend=entropy]");
    renderEntropyLegend(entropyLegend);
    this.tints = new TintSwitch(document.querySelector("[data-tint-switch]"), [output, this.view.output], [$("legend"), entropyLegend]);
  }

  /** A new run takes the screen: its prompt's surprisal comes with its events. */
  clear() {
    this.view.show(null);
  }

  /** A `prompt_surprisal` event of `run`; shown once the last page is in, if the run is on screen. */
  receive(run, event, onScreen) {
    if (!run) return;
    if (!this.pages.has(run)) this.pages.set(run, new SurprisalPages());
    const pages = this.pages.get(run);
    pages.add(event);
    if (onScreen && pages.record) this.#show(pages.record);
  }

  /** Shows the prompt of a run taken from the branch tree (nothing when it did not ask). */
  showRun(run) {
    this.view.show(this.pages.get(run)?.record ?? null);
    this.tints.set(this.tints.mode);
  }

  /** "Score this text": the form's text, read as `generate` would feed it, scored without generating. */
  async score() {
    if (this.busy()) return;
    const request = this.readForm();
    if (!request) return;
    const body = Object.fromEntries(SCORE_KEYS.filter((key) => key in request).map((key) => [key, request[key]]));
    this.scoreButton.disabled = true;
    this.stats.status("Scoring the text (no generation)…", "waiting");
    try {
      const record = recordFromScores(await this.client.request("score", body));
      this.#show(record);
      this.stats.status(`Scored ${record.count} tokens, nothing generated. ${summaryText(record)}.`, "done");
      this.view.root.scrollIntoView({ block: "nearest" });
    } catch (error) {
      this.stats.failed(errorText(error.message, error.param));
    } finally {
      this.scoreButton.disabled = false;
    }
  }

  #show(record) {
    this.view.show(record);
    this.tints.set(this.tints.mode);
  }
}
