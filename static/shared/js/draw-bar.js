// Where the random draw u fell: the final distribution as one cumulative bar (tokens in the order
// the pick walks them: final probability descending, ties lower id first), with a marker at u.
// The chosen token is the segment the marker lands in (docs/sampling.md, "The final pick").
// Only the shown alternatives are known by name; the rest of the mass is one "others" segment.

import { formatProb, quoteToken } from "./format.js";
import { r2, svg, titled } from "./svg.js";

const WIDTH = 300;
const HEIGHT = 46;
const BAR_Y = 16;
const BAR_H = 16;

/** The segments [{id, token, prob, start, end, chosen}] for a token event. */
export function cumulativeSegments(token) {
  const known = new Map();
  for (const alt of token.alternatives ?? []) known.set(alt.id, alt);
  if (!known.has(token.id)) known.set(token.id, { id: token.id, token: token.token, prob: token.prob });
  const kept = [...known.values()].filter((a) => a.prob > 0).sort((a, b) => b.prob - a.prob || a.id - b.id);
  const segments = [];
  let start = 0;
  for (const alt of kept) {
    segments.push({ id: alt.id, token: alt.token, prob: alt.prob, start, end: start + alt.prob, chosen: alt.id === token.id });
    start += alt.prob;
  }
  const rest = 1 - start;
  if (rest > 1e-9) segments.push({ id: null, token: null, prob: rest, start, end: 1, chosen: false });
  return segments;
}

/** An SVG of the cumulative bar with the draw marked, or null under greedy (no draw). */
export function drawBar(token) {
  if (typeof token.draw !== "number") return null;
  const segments = cumulativeSegments(token);
  const u = token.draw;
  const chosen = segments.find((s) => s.chosen);
  const label = `Cumulative bar of the final probabilities; the draw u = ${u.toFixed(4)} fell in ` +
    (chosen ? `${quoteToken(chosen.token)}'s segment, from ${chosen.start.toFixed(4)} to ${chosen.end.toFixed(4)}` : "the bar");
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "draw-bar", role: "img", "aria-label": label });
  root.dataset.draw = String(u);
  segments.forEach((s, i) => {
    const x = s.start * WIDTH;
    const w = Math.max(0.5, s.prob * WIDTH);
    const cls = s.chosen ? "seg chosen" : s.id === null ? "seg others" : `seg ${i % 2 ? "odd" : "even"}`;
    const rect = svg("rect", { x: r2(x), y: BAR_Y, width: r2(w), height: BAR_H, class: cls });
    const name = s.id === null ? "all other tokens" : quoteToken(s.token);
    titled(rect, `${name}: ${formatProb(s.prob)} (cumulative ${s.start.toFixed(3)}–${s.end.toFixed(3)})`);
    root.append(rect);
    if (s.chosen && w > 24) {
      root.append(svg("text", { x: r2(x + w / 2), y: BAR_Y + BAR_H - 4, class: "seg-label", "text-anchor": "middle" },
        clip(quoteToken(s.token), Math.floor(w / 6))));
    }
  });
  const ux = u * WIDTH;
  root.append(svg("line", { x1: r2(ux), x2: r2(ux), y1: BAR_Y - 4, y2: BAR_Y + BAR_H + 4, class: "draw-marker" }));
  root.append(svg("path", { d: `M${r2(ux - 5)},2 L${r2(ux + 5)},2 L${r2(ux)},${BAR_Y - 3} Z`, class: "draw-marker-head" }));
  const anchor = u > 0.8 ? "end" : u < 0.2 ? "start" : "middle";
  root.append(svg("text", { x: r2(ux + (anchor === "start" ? 7 : anchor === "end" ? -7 : 0)), y: 11, class: "draw-label", "text-anchor": anchor },
    `u = ${u.toFixed(4)}`));
  root.append(svg("text", { x: 0, y: HEIGHT - 1, class: "axis-label" }, "0"));
  root.append(svg("text", { x: WIDTH, y: HEIGHT - 1, class: "axis-label", "text-anchor": "end" }, "1"));
  return root;
}

function clip(text, max) {
  return text.length <= max ? text : `${text.slice(0, Math.max(1, max - 1))}…`;
}
