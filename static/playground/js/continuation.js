// What continuing a run sends: a step (one token more on the text), a branch (another alternative
// forced at a token), a what-if continuation (new dials from a token on) and an edit (the person's
// own text forced from a token on, `typed_tokens` saying how much of the prefix they typed; a
// branch says `branched`: its last prefix token is the alternative picked). The form's lengths are
// for the whole text, while the server counts `max_tokens` and `min_tokens` after the forced prefix
// (docs/websocket-api.md), so each request asks for the whole text's length less its own prefix.
// Continuations sample one text (no `n`, no beams) with the parent's seed, so the draws line up.

import { DEFAULTS } from "./params-schema.js";
import { Run } from "./run.js";
import { wireSeed } from "./step-context.js";

/** Sets `max_tokens` / `min_tokens` of `params` for a run forcing `prefixLength` tokens, when the
 *  whole text should be `wanted.max` tokens long and end no earlier than `wanted.min`. `cap` limits
 *  max_tokens (1 for a step); min_tokens never exceeds max_tokens and is left out when 0 (its "off"
 *  value, as the form does). Returns `params`. */
export function withLengths(params, wanted, prefixLength, cap = Infinity) {
  params.max_tokens = Math.min(cap, Math.max(1, wanted.max - prefixLength));
  const min = Math.min(params.max_tokens, Math.max(0, wanted.min - prefixLength));
  if (min > 0) params.min_tokens = min;
  else delete params.min_tokens;
  return params;
}

/** The whole text's lengths a run was asked for: its prefix plus its own max/min tokens (the
 *  server's defaults when unset), unless it was a step, which keeps the form's on the run. */
export function wantedLengths(run) {
  if (run.wanted) return run.wanted;
  const params = run.request.params ?? {};
  const prefix = run.request.prefix_tokens?.length ?? 0;
  return { max: prefix + (params.max_tokens ?? DEFAULTS.max_tokens), min: prefix + (params.min_tokens ?? DEFAULTS.min_tokens) };
}

function oneText(params) {
  delete params.n;
  delete params.num_beams;
  return params;
}

/** `parent_run` / `branch_index` label a branch of a saved run (the server stores the link). */
function savedParent(run, index) {
  return run.done?.run_id ? { parent_run: run.done.run_id, branch_index: index } : { parent_run: undefined, branch_index: undefined };
}

/** A branch's params: the parent's with `overrides`, its seed, and the parent's whole length. */
function branchParams(base, overrides, prefixLength) {
  const params = oneText({ ...base.request.params, ...overrides });
  if (base.started) params.seed = wireSeed(base.started.seed);
  return withLengths(params, wantedLengths(base), prefixLength);
}

/** Branch: `base`'s text up to token `index`, then the alternative `altId` forced, then sampling. */
export function branchRun(base, index, altId) {
  const params = branchParams(base, {}, index + 1);
  return new Run({
    ...base.request, params, prefix_tokens: [...base.ids(index), altId], typed_tokens: undefined, branched: true, ...savedParent(base, index),
  });
}

/** "Continue from here with these settings": `run`'s first `index` tokens, then the `sampling` dials. */
export function whatIfRun(run, index, sampling) {
  const params = branchParams(run, sampling, index);
  return new Run({ ...run.request, params, prefix_tokens: run.ids(index), typed_tokens: undefined, branched: undefined, ...savedParent(run, index) });
}

/** Edit and continue: `base`'s first `index` tokens kept, then `typedIds` (the person's text,
 *  tokenized alone) forced and marked typed, then sampling with `base`'s params (`overrides` over
 *  them, the form's when chosen) and its seed. After the edit the model gets as many new tokens as
 *  `base` was asked for from `index` on. */
export function editRun(base, index, typedIds, overrides = {}) {
  const prefix = [...base.ids(index), ...typedIds];
  const wanted = wantedLengths(base);
  const shifted = { max: wanted.max + typedIds.length, min: wanted.min + typedIds.length };
  const params = oneText({ ...base.request.params, ...overrides });
  if (base.started) params.seed = wireSeed(base.started.seed);
  withLengths(params, shifted, prefix.length);
  return new Run({
    ...base.request, params, prefix_tokens: prefix, typed_tokens: typedIds.length, branched: undefined, ...savedParent(base, index),
  });
}

// What a request feeds the model before its tokens: the model, one prompt (and system message),
// or a chat conversation (`messages`).
const PROMPT_KEYS = ["model", "prompt", "mode", "system", "messages", "continue_final_message"];

function promptOf(request) {
  const out = {};
  for (const key of PROMPT_KEYS) if (request[key] !== undefined && request[key] !== null) out[key] = request[key];
  return out;
}

function samePrompt(a, b) {
  return JSON.stringify(promptOf(a)) === JSON.stringify(promptOf(b));
}

/** Step: one token more on `current` (the run on screen) with the form's `request`. Returns
 *  {run, extends}: `extends` when it continues `current`'s text (same prompt and mode, finished,
 *  not beams); otherwise a new one-token run. {ended: true} when the model already ended that text. */
export function stepRun(current, request) {
  if (current?.done?.reason === "eos" && samePrompt(current.request, request)) return { ended: true };
  const extendable = Boolean(current && current.finished && !current.error && !current.isBeam &&
    samePrompt(current.request, request) && current.tokens.length > 0);
  const wanted = {
    max: request.params.max_tokens ?? DEFAULTS.max_tokens,
    min: request.params.min_tokens ?? DEFAULTS.min_tokens,
  };
  const prefix = extendable ? current.ids() : [];
  const params = oneText(withLengths({ ...request.params }, wanted, prefix.length, 1));
  let run;
  if (extendable) {
    if (params.seed === null && current.started) params.seed = wireSeed(current.started.seed); // the same draws
    const base = { ...request };
    for (const key of PROMPT_KEYS) delete base[key];
    run = new Run({ ...base, ...promptOf(current.request), params, prefix_tokens: prefix });
    delete run.request.parent_run;
    delete run.request.branch_index;
    delete run.request.typed_tokens;
    delete run.request.branched;
  } else {
    run = new Run({ ...request, params });
  }
  run.wanted = wanted;
  return { run, extends: extendable };
}
