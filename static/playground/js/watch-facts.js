// Watched tokens, read from a run's `token` events (each carries `watched`: the tokens the request
// named, with raw and final probability, raw and final rank and the stage that removed them).
// Pure functions, no DOM: the series a chart draws, one step's numbers in words, and the sentence
// that answers "why did it never say …?". The numbers are the server's; nothing is recomputed.

import { formatProb, quoteToken } from "../../shared/js/format.js";

export const NEVER_TOP = 20; // "never in the top 20": the most alternatives a run may list

/** One series per watched token, in the request's order: {id, token, steps: [{raw, final,
 *  rawRank, rank, removedBy, chosen} | null per token event]} (null: a step that watched nothing,
 *  e.g. a run saved before watching existed). */
export function watchSeries(tokens) {
  const series = new Map();
  tokens.forEach((event, i) => {
    for (const w of event?.watched ?? []) {
      if (!series.has(w.id)) series.set(w.id, { id: w.id, token: w.token, steps: new Array(tokens.length).fill(null) });
      series.get(w.id).steps[i] = {
        raw: w.raw_prob, final: w.prob, rawRank: w.raw_rank, rank: w.rank, removedBy: w.removed_by, chosen: event.id === w.id,
      };
    }
  });
  return [...series.values()];
}

/** One watched token at one step, in words: "“ Lyon” raw 0.12% (rank 57) → final 0% (removed by top_p)". */
export function stepText(series, index) {
  const step = series.steps[index];
  const name = quoteToken(series.token);
  if (!step) return `${name}: not watched at this step`;
  const rawRank = step.rawRank === null ? "ruled out by the model" : `rank ${step.rawRank}`;
  const after = step.removedBy
    ? `removed by ${step.removedBy}`
    : step.rank === null ? "no chance" : `rank ${step.rank}${step.chosen ? ", chosen" : ""}`;
  return `${name} raw ${formatProb(step.raw)} (${rawRank}) → final ${formatProb(step.final)} (${after})`;
}

/** Why the run said, or never said, this token, over the steps that watched it: "“ Lyon” was
 *  never chosen: removed by top_p at 12 of 14 steps; never in the top 20 (best rank 57)." */
export function whyText(series) {
  const steps = series.steps.filter(Boolean);
  const name = quoteToken(series.token);
  const n = steps.length;
  if (!n) return `${name} was not watched in this run.`;
  const of = (k) => `${k} of ${n} step${n === 1 ? "" : "s"}`;
  const chosen = steps.filter((s) => s.chosen).length;
  const parts = [];
  const removed = new Map();
  for (const s of steps) if (s.removedBy) removed.set(s.removedBy, (removed.get(s.removedBy) ?? 0) + 1);
  const byCount = [...removed].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  if (byCount.length) parts.push(`removed by ${byCount.map(([stage, k]) => `${stage} at ${of(k)}`).join(", by ")}`);
  const ruledOut = steps.filter((s) => s.rawRank === null).length;
  if (ruledOut) parts.push(`ruled out by the model itself at ${of(ruledOut)}`);
  const kept = steps.filter((s) => !s.chosen && s.final > 0);
  if (kept.length) {
    const best = Math.max(...kept.map((s) => s.final));
    parts.push(`kept but not drawn at ${of(kept.length)} (at most ${formatProb(best)})`);
  }
  const ranks = steps.map((s) => s.rawRank).filter((r) => r !== null);
  if (ranks.length) {
    const best = Math.min(...ranks);
    parts.push(best > NEVER_TOP ? `never in the top ${NEVER_TOP} (best rank ${best})` : `best rank ${best} before sampling`);
  }
  const head = chosen ? `${name} was chosen at ${of(chosen)}` : `${name} was never chosen`;
  return parts.length ? `${head}: ${parts.join("; ")}.` : `${head}.`;
}

/** The points of one series' line, "x,y x,y …", skipping steps that watched nothing (a gap
 *  starts a new line): `x(i)` and `y(p)` map a step and a probability to the chart. */
export function linePoints(series, key, x, y) {
  const lines = [];
  let line = [];
  series.steps.forEach((step, i) => {
    if (!step) {
      if (line.length) lines.push(line.join(" "));
      line = [];
      return;
    }
    line.push(`${Math.round(x(i) * 100) / 100},${Math.round(y(step[key]) * 100) / 100}`);
  });
  if (line.length) lines.push(line.join(" "));
  return lines;
}
