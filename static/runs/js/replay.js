// Replay: runs a saved run's request again over the websocket, with the same seed, and says
// whether the tokens came out identical or where they first differ. Pure comparison + one client.

import { GenerateClient, seedValue } from "../../playground/js/socket.js";

/** The `generate` body that reproduces a saved run; `seed` is the exact decimal string. */
export function replayRequest(run, seed) {
  const request = run.request;
  const body = {
    prompt: request.prompt,
    mode: request.mode,
    params: { ...request.params, seed: seedValue(seed) },
    top_n: request.top_n,
    use_cache: request.use_cache,
  };
  if (request.system !== null && request.system !== undefined) body.system = request.system;
  if (request.prefix_tokens?.length) body.prefix_tokens = request.prefix_tokens;
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

/** Runs the replay; resolves to {result, done}. `onProgress(count)` after each token. */
export function replay(run, seed, onProgress = () => {}) {
  const client = new GenerateClient();
  const tokens = [];
  return new Promise((resolve, reject) => {
    client.generate(replayRequest(run, seed), (event) => {
      if (event.type === "token") {
        tokens.push(event);
        onProgress(tokens.length);
      } else if (event.type === "done") {
        const prefixOnly = run.status !== "complete";
        resolve({ result: compareTokens(run.tokens, tokens, { prefixOnly }), done: event, tokens });
      } else if (event.type === "error") {
        reject(new Error(event.error?.param ? `${event.error.param}: ${event.error.message}` : event.error?.message));
      }
    }).catch(reject);
  });
}
