// Replay: runs a saved run's request again over the websocket, with the same seed, and says
// whether the tokens came out identical or where they first differ. Pure comparison + one client.

import { errorText } from "../../playground/js/field-names.js";
import { GenerateClient, seedValue } from "../../shared/js/socket.js";

/** The `generate` body that reproduces a saved run, on the model that ran it; `seed` is the exact
 *  decimal string. A chat
 *  run's conversation (`messages`, `continue_final_message`) is sent whole, in place of `prompt`. */
export function replayRequest(run, seed) {
  const request = run.request;
  const body = {
    mode: request.mode,
    params: { ...request.params, seed: seedValue(seed) },
    top_n: request.top_n,
    use_cache: request.use_cache,
  };
  if (request.messages) {
    body.messages = request.messages.map(({ role, content }) => ({ role, content }));
    body.continue_final_message = request.continue_final_message === true;
  } else {
    body.prompt = request.prompt;
    if (request.system !== null && request.system !== undefined) body.system = request.system;
  }
  if (request.prefix_tokens?.length) body.prefix_tokens = request.prefix_tokens;
  if (request.typed_tokens) body.typed_tokens = request.typed_tokens;
  // A branch's alternative (its token says so) is the prefix's last token before the typed ones.
  const picked = (request.prefix_tokens?.length ?? 0) - (request.typed_tokens ?? 0) - 1;
  if (picked >= 0 && run.tokens?.some((t) => (t.sample ?? 0) === 0 && t.index === picked && t.origin === "branch")) body.branched = true;
  const model = request.model ?? run.model?.id ?? run.model?.name; // the model that ran it (by id, or its manifest name)
  if (model) body.model = model;
  return body;
}

/** Compares stored tokens with replayed ones, sample by sample, position by position.
 *  Returns {identical, position, sample, expected, got}. A cancelled original is compared over
 *  the tokens it kept. */
export function compareTokens(stored, replayed, { prefixOnly = false } = {}) {
  const key = (t) => `${t.sample ?? 0}:${t.index}`;
  const got = new Map(replayed.map((t) => [key(t), t]));
  const ordered = [...stored].sort((a, b) => (a.sample ?? 0) - (b.sample ?? 0) || a.index - b.index);
  for (const token of ordered) {
    const other = got.get(key(token));
    if (!other || other.id !== token.id) {
      return { identical: false, sample: token.sample ?? 0, position: token.index, expected: token, got: other ?? null };
    }
  }
  if (!prefixOnly) {
    const storedKeys = new Set(stored.map(key));
    const extra = replayed.find((t) => !storedKeys.has(key(t)));
    if (extra) return { identical: false, sample: extra.sample ?? 0, position: extra.index, expected: null, got: extra };
  }
  return { identical: true };
}

/** Compares a beam-search run's final hypotheses (`done.beams`, best first) with the replay's, beam
 *  by beam, token id by token id. Returns {identical} or {identical: false, beam, position,
 *  expected, got} (ids; null where one side has no token there; position null when the replay has
 *  a different number of beams). A cancelled original is compared over what it kept. */
export function compareBeams(stored, replayed, { prefixOnly = false } = {}) {
  const count = prefixOnly ? stored.length : Math.max(stored.length, replayed.length);
  for (let beam = 0; beam < count; beam++) {
    const want = stored[beam]?.token_ids ?? null;
    const have = replayed[beam]?.token_ids ?? null;
    if (!want || !have) return { identical: false, beam, position: null, expected: want, got: have };
    const length = prefixOnly ? want.length : Math.max(want.length, have.length);
    for (let position = 0; position < length; position++) {
      if (want[position] !== have[position]) {
        return { identical: false, beam, position, expected: want[position] ?? null, got: have[position] ?? null };
      }
    }
  }
  return { identical: true };
}

/** Whether a saved run was a beam search (its tokens are `beams`, not `token` events). */
export function isBeamRun(run) {
  return (run.request?.params?.num_beams ?? 1) > 1;
}

/** Runs the replay; resolves to {result, done}. `onProgress(count)` after each token (or beam step). */
export function replay(run, seed, onProgress = () => {}) {
  const client = new GenerateClient();
  const tokens = [];
  return new Promise((resolve, reject) => {
    let steps = 0;
    client.generate(replayRequest(run, seed), (event) => {
      if (event.type === "token") {
        tokens.push(event);
        onProgress(tokens.length);
      } else if (event.type === "beam_step") {
        onProgress(++steps);
      } else if (event.type === "done") {
        const prefixOnly = run.status !== "complete";
        const result = isBeamRun(run)
          ? compareBeams(run.result?.beams ?? [], event.beams ?? [], { prefixOnly })
          : compareTokens(run.tokens, tokens, { prefixOnly });
        resolve({ result, done: event, tokens });
      } else if (event.type === "error") {
        reject(new Error(errorText(event.error?.message, event.error?.param))); // the field as the pages name it
      }
    }).catch(reject);
  });
}
