// "Compare without speculation": the run on screen sent again with the same prompt, seed and
// settings but `params.speculative` left out (not saved), then both runs' decode speed and whether
// their tokens are the same (speculative-steps.js's comparison, in words). Greedy output must be
// identical; sampled runs draw differently and are only distributed alike.

import { compareWithout, comparisonWords } from "../../shared/js/speculative-steps.js";
import { seedValue } from "../../shared/js/socket.js";
import { Run } from "./run.js";

/** The `generate` body of `run` without speculation: its request, the seed it used, not saved. */
export function plainRequest(run) {
  const { speculative: _off, ...params } = run.request.params;
  const body = { ...run.request, params: { ...params, seed: seedValue(run.started.seed) }, save: false };
  delete body.prompt_scores; // the prompt's surprisal is the first run's, and costs the prefill
  delete body.watch;
  return body;
}

export class CompareWithout {
  /** @param root  [data-action=compare-without] and [data-compare-result] inside;
   *  @param client  the page's GenerateClient */
  constructor(root, client) {
    this.client = client;
    this.button = root.querySelector("[data-action=compare-without]");
    this.result = root.querySelector("[data-compare-result]");
    this.run = null;
    this.button.addEventListener("click", () => this.#compare());
  }

  /** The run on screen: the button is offered for a finished speculative run. */
  show(run) {
    this.run = run;
    this.result.textContent = "";
    delete this.result.dataset.identical;
    const ready = Boolean(run?.request.params?.speculative && run.done && run.started);
    this.button.hidden = !ready;
    this.button.disabled = false;
  }

  async #compare() {
    const run = this.run;
    if (!run?.done || !run.started) return;
    const plain = new Run(plainRequest(run));
    this.button.disabled = true;
    this.result.textContent = "Running the same request without speculation…";
    delete this.result.dataset.identical;
    const ended = new Promise((resolve) => {
      this.client.generate(plain.request, (event) => {
        plain.apply(event);
        if (event.type === "done" || event.type === "error") resolve();
      }).catch((error) => {
        plain.error = { message: error.message };
        resolve();
      });
    });
    await ended;
    if (this.run !== run) return; // another run is on screen now
    this.button.disabled = false;
    if (plain.error) {
      this.result.textContent = `The run without speculation failed: ${plain.error.message}`;
      return;
    }
    const comparison = compareWithout(run, plain, run.started.params);
    this.result.textContent = comparisonWords(comparison);
    this.result.dataset.identical = String(comparison.identical);
  }
}
