// What an `inspect` request needs to reproduce one step of a run: the run's prompt, mode, system
// message and sampling parameters, and the tokens before that step as `prefix_tokens`.

import { SAMPLING_KEYS } from "./params-schema.js";
import { seedValue } from "../../shared/js/socket.js";

/** A seed as the server gave it (a decimal string, socket.js) → a value to send exactly. */
export function wireSeed(seed) {
  return seed === null || seed === undefined ? null : seedValue(String(seed));
}

// Loop keys that change one step's distribution: `inspect` accepts them in `params` and uses
// penalize_prompt for the penalties' history (the prompt's tokens too), as the run did.
const STEP_LOOP_KEYS = new Set(["penalize_prompt"]);

/** The run's parameters that shape one step (normalized from `started` when there, else as
 *  requested): the sampler chain's and the loop's that matter for a single step. */
export function samplingParams(run) {
  const source = run.started?.params ?? run.request.params ?? {};
  const params = {};
  for (const [key, value] of Object.entries(source)) {
    if (SAMPLING_KEYS.has(key) || STEP_LOOP_KEYS.has(key)) params[key] = value;
  }
  if ("seed" in params) params.seed = wireSeed(params.seed);
  return params;
}

/** The body of an `inspect` for step `index` of `run` (without params/variants), on the run's model. */
export function inspectBase(run, index, topN = 10) {
  const model = run.request.model ? { model: run.request.model } : {};
  if (run.request.messages) {
    // a chat conversation of several turns: sent as the run sent it
    const body = { ...model, mode: "chat", messages: run.request.messages, prefix_tokens: run.ids(index), top_n: topN };
    if (run.request.continue_final_message) body.continue_final_message = true;
    return body;
  }
  const body = {
    ...model,
    prompt: run.request.prompt,
    mode: run.request.mode ?? "completion",
    system: run.request.system ?? null,
    prefix_tokens: run.ids(index),
    top_n: topN,
  };
  return body;
}
