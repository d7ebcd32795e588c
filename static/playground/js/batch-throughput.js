// The batch's throughput against one row alone: every lane's tokens over the wall time from the
// first lane's `started` (its prompt read) to the last token, and the same for lane 1 run on its
// own ("Run lane 1 alone"). Measured the same way, so they compare; the wait before the first start
// (a worker loading its model, other clients' work) is left out. Arrival times are the page's
// (performance.now()).

import { formatRate } from "../../shared/js/format.js";

/** Tokens per second of `tokens` received between `sentAt` and `lastAt` (ms); null when unknown. */
export function wallRate(tokens, sentAt, lastAt) {
  if (!tokens || sentAt === null || lastAt === null || lastAt <= sentAt) return null;
  return (tokens * 1000) / (lastAt - sentAt);
}

/** One measurement: when it was sent, how many tokens arrived and when the last did. */
export class Measure {
  constructor() {
    this.sentAt = null;
    this.lastAt = null;
    this.tokens = 0;
    this.rows = 0;
  }

  start(rows) {
    this.sentAt = null;
    this.lastAt = null;
    this.tokens = 0;
    this.rows = rows;
  }

  /** A lane's `started`: the clock runs from the first. */
  started() {
    this.sentAt ??= performance.now();
  }

  token() {
    this.tokens += 1;
    this.lastAt = performance.now();
  }

  get rate() {
    return wallRate(this.tokens, this.sentAt, this.lastAt);
  }
}

export class ThroughputView {
  /** @param root  a <dl> with [data-stat=together], [data-stat=alone], [data-stat=ratio] */
  constructor(root) {
    this.fields = Object.fromEntries([...root.querySelectorAll("[data-stat]")].map((n) => [n.dataset.stat, n]));
  }

  render(together, alone) {
    const t = together.rate;
    const a = alone.rate;
    this.fields.together.textContent = t === null ? "–" : `${formatRate(t)} (${together.tokens} tokens, ${together.rows} lanes)`;
    this.fields.alone.textContent = a === null ? "–" : `${formatRate(a)} (${alone.tokens} tokens)`;
    this.fields.ratio.textContent = t !== null && a !== null ? `× ${(t / a).toFixed(2)}` : "–";
  }
}
