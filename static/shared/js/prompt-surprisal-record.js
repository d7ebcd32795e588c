// The prompt-surprisal record and its pure transforms (no DOM; tested in Node): a run's
// `prompt_surprisal` event pages gathered, a `score` answer as the same record, each prompt token
// as the token event the stream and inspector read, and the summary line. The view is
// prompt-surprisal.js.

/** A run's `prompt_surprisal` event pages, gathered; `record` once every page is in, else null. */
export class SurprisalPages {
  constructor() {
    this.pages = [];
  }

  add(event) {
    this.pages.push(event);
  }

  get record() {
    if (!this.pages.length) return null;
    const tokens = [...this.pages].sort((a, b) => a.offset - b.offset).flatMap((page) => page.tokens);
    const { count, perplexity, total_bits } = this.pages[0];
    return tokens.length === count ? { count, perplexity, total_bits, tokens } : null;
  }
}

/** A `score` frame's `prompt_scores` answer as the same record (probabilities from log-probabilities;
 *  the answer gives no rank or entropy). */
export function recordFromScores(answer) {
  const tokens = answer.tokens.map((t) => ({
    id: t.id,
    token: t.token,
    logprob: t.logprob,
    prob: t.logprob === null ? null : Math.exp(t.logprob),
    rank: t.rank ?? null,
    entropy: t.entropy ?? null,
    alternatives: t.top.map((a) => ({ id: a.id, token: a.token, prob: Math.exp(a.logprob) })),
  }));
  const scored = tokens.filter((t) => t.logprob !== null);
  const nats = -scored.reduce((sum, t) => sum + t.logprob, 0);
  return {
    count: tokens.length,
    perplexity: scored.length ? Math.exp(nats / scored.length) : null,
    total_bits: nats / Math.LN2,
    tokens,
  };
}

/** Each prompt token as the token event the stream and the inspector read: raw and final
 *  probability are the model's own (no sampler stage applies to a prompt). */
export function promptTokenEvents(record) {
  return record.tokens.map((t, index) => ({
    index,
    id: t.id,
    token: t.token,
    text: t.token,
    prob: t.prob,
    raw_prob: t.prob,
    rank: t.rank,
    prompt: true,
    entropy: t.entropy === null ? null : { before: t.entropy, after: t.entropy },
    alternatives: t.alternatives.map((a) => ({ ...a, raw_prob: a.prob, removed_by: null })),
    stages: [],
  }));
}

/** "Perplexity 7.79 · 44.4 bits in all, 2.96 bits per token over 15 predicted tokens". */
export function summaryText(record) {
  const predicted = record.tokens.filter((t) => t.prob !== null).length;
  if (!predicted) return "A one-token prompt: nothing comes before its token, so nothing predicts it.";
  const perToken = record.total_bits / predicted;
  return `Perplexity ${record.perplexity.toFixed(2)} · ${record.total_bits.toFixed(1)} bits in all, ` +
    `${perToken.toFixed(2)} bits per token over ${predicted} predicted token${predicted === 1 ? "" : "s"} ` +
    "(the first has nothing before it)";
}
