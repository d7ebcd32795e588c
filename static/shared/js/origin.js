// How a token got there: its `origin`, one fact the server decides (inference/decoding/origin.py,
// docs/websocket-api.md) and every view reads through here, so each shows only what is true for
// it. `ORIGINS` has the page's words for each name (tests check the names against the server's);
// `originOf` reads a token event, and gives an older event (a run saved before origins, a page
// fixture) the origin its other fields imply, as the server does.

export const ORIGINS = {
  sampled: { drawn: true, mark: "✓ chosen", short: "sampled", says: "Sampled: the random draw u picked it" },
  greedy: { drawn: false, mark: "✓ chosen", short: "greedy", says: "Greedy: the most likely token, taken with no draw" },
  forced_by_grammar: { drawn: false, mark: "✓ the only one allowed", short: "the grammar allowed only this token", says: "The grammar allowed only this token here, so no draw could pick another" },
  draft: { drawn: false, mark: "✓ accepted draft", short: "accepted from a draft", says: "Drafted, then accepted by the model's acceptance rule (speculative decoding)" },
  corrected: { drawn: false, mark: "✓ drawn for a rejected draft", short: "drawn after a rejected draft", says: "Sampled after a rejected draft: drawn from what the draft left, max(0, p − q)" },
  typed: { drawn: false, mark: "typed by you", short: "typed by you", says: "Typed by you: your edit, forced, not sampled" },
  branch: { drawn: false, mark: "picked as a branch", short: "picked as a branch", says: "Picked as a branch: the alternative you chose, forced, not sampled" },
  kept: { drawn: false, mark: "kept", short: "kept from the run this continues", says: "Kept from the run this one continues: forced, and this run's own settings and draw would have picked another token" },
  prompt: { drawn: false, mark: "this token", short: "prompt token", says: "A prompt token: the model scored it, nothing chose it" },
};

const GRAMMAR = "grammar";

/** The origin of a token event (or a prompt token of prompt-surprisal-record.js). */
export function originOf(token) {
  if (token.origin && token.origin in ORIGINS) return token.origin;
  if (token.prompt) return "prompt";
  if (token.typed) return "typed";
  if (token.drafted) return "draft";
  if (token.forced) return "kept";
  if (grammarLeftOne(token.stages ?? [])) return "forced_by_grammar";
  return token.draw === null || token.draw === undefined ? "greedy" : "sampled";
}

function grammarLeftOne(stages) {
  let before = null;
  for (const stage of stages) {
    if (stage.name === GRAMMAR) return stage.kept === 1 && (before === null || before > 1);
    before = stage.kept;
  }
  return false;
}

/** The page's words for a token's origin. */
export function originFacts(token) {
  return ORIGINS[originOf(token)];
}

/** Whether the draw u picked this token (only then is u shown on the cumulative bar). */
export function wasDrawn(token) {
  return originFacts(token).drawn;
}

/** Whether the person chose it (typed or branched): no "chosen with", no draw. */
export function chosenByPerson(token) {
  const origin = originOf(token);
  return origin === "typed" || origin === "branch";
}
