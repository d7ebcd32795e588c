// Where the random draw u fell: the final distribution as one cumulative bar (tokens in the order
// the pick walks them: final probability descending, ties lower id first), with a marker at u.
// The chosen token sits at its real place, the server's `draw_interval` (the mass of every token
// ahead of it, docs/websocket-api.md), wherever it ranks; a picked token's segment holds u
// (docs/sampling.md, "The final pick"). Only the listed alternatives are known by name: the mass
// ahead of the chosen token that they do not cover, and the mass after it, are drawn as "other
// tokens". Listed tokens ahead of it are drawn from 0, those after it right after it: their true
// places too unless a stage reordered tokens (penalties, logit bias, DRY), which may put unlisted
// tokens among them.
// Only a token the draw picked gets the bar (origin.js): a typed, branched, kept, greedy, drafted
// token or one the grammar forced has no u to show there.

import { formatProb, quoteToken } from "./format.js";
import { wasDrawn } from "./origin.js";
import { r2, svg, titled } from "./svg.js";

const WIDTH = 300;
const HEIGHT = 58;
const BAR_Y = 16;
const BAR_H = 16;
const EPS = 1e-9; // less unlisted mass than this is rounding, not a segment

/** The segments [{id, token, prob, start, end, chosen}] for a token event, in pick order; an
 *  "other tokens" segment has id null. */
export function cumulativeSegments(token) {
  const listed = (token.alternatives ?? []).filter((a) => a.prob > 0 && a.id !== token.id);
  const ahead = (a) => a.prob > token.prob || (a.prob === token.prob && a.id < token.id);
  const byPick = (a, b) => b.prob - a.prob || a.id - b.id;
  const segments = [];
  let at = 0;
  const add = (alt, prob, start = at) => {
    segments.push({ id: alt?.id ?? null, token: alt?.token ?? null, prob, start, end: start + prob, chosen: alt?.id === token.id });
    at = start + prob;
  };
  for (const alt of listed.filter(ahead).sort(byPick)) add(alt, alt.prob);
  const place = chosenPlace(token, at);
  if (place) {
    const [start, end] = place;
    if (start - at > EPS) add(null, start - at);
    add(token, end - start, start);
    for (const alt of listed.filter((a) => !ahead(a)).sort(byPick)) add(alt, alt.prob);
  }
  if (1 - at > EPS) add(null, 1 - at);
  return segments;
}

/** The chosen token's [start, end): the server's `draw_interval`; for a run saved before it was
 *  sent, right after the listed tokens ahead of it when it is listed itself; else null (unknown,
 *  or no segment: final probability 0). */
function chosenPlace(token, listedAhead) {
  const interval = token.draw_interval;
  if (Array.isArray(interval) && interval.length === 2) return [Math.max(interval[0], listedAhead), interval[1]];
  if (!(token.prob > 0) || !(token.alternatives ?? []).some((a) => a.id === token.id)) return null;
  return [listedAhead, listedAhead + token.prob];
}

/** The bar's accessible name: where u fell, in words. */
export function drawLabel(token, segments) {
  const u = token.draw.toFixed(4);
  const chosen = segments.find((s) => s.chosen);
  const span = chosen ? `from ${chosen.start.toFixed(4)} to ${chosen.end.toFixed(4)}` : "";
  const lead = `Cumulative bar of the final probabilities; the draw u = ${u}`;
  if (chosen) return `${lead} fell in ${quoteToken(chosen.token)}'s segment, ${span}`;
  return `${lead} fell among the other tokens, where ${quoteToken(token.token)} lies ` +
    "(this run was saved before the chosen token's place was kept)";
}

/** Whether a token gets the bar: the draw u picked it. */
export function showsDraw(token) {
  return typeof token.draw === "number" && wasDrawn(token);
}

/** An SVG of the cumulative bar with the draw marked, or null for a token no draw picked. */
export function drawBar(token) {
  if (!showsDraw(token)) return null;
  const segments = cumulativeSegments(token);
  const u = token.draw;
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "draw-bar", role: "img", "aria-label": drawLabel(token, segments) });
  root.dataset.draw = String(u);
  segments.forEach((s, i) => {
    const x = s.start * WIDTH;
    const w = Math.max(0.5, s.prob * WIDTH);
    const cls = s.chosen ? "seg chosen" : s.id === null ? "seg others" : `seg ${i % 2 ? "odd" : "even"}`;
    const rect = svg("rect", { x: r2(x), y: BAR_Y, width: r2(w), height: BAR_H, class: cls });
    const name = s.id === null ? "other tokens (not listed)" : quoteToken(s.token);
    titled(rect, `${name}: ${formatProb(s.prob)} (cumulative ${s.start.toFixed(3)}–${s.end.toFixed(3)})`);
    root.append(rect);
    if (s.chosen && w > 24) {
      root.append(svg("text", { x: r2(x + w / 2), y: BAR_Y + BAR_H - 4, class: "seg-label", "text-anchor": "middle" },
        clip(quoteToken(s.token), Math.floor(w / 6))));
    } else if (s.chosen) { // too narrow to hold its name: the name goes under the bar, beside it
      const mid = x + w / 2;
      const anchor = mid > WIDTH * 0.8 ? "end" : mid < WIDTH * 0.2 ? "start" : "middle";
      root.append(svg("text", { x: r2(mid), y: BAR_Y + BAR_H + 12, class: "axis-label chosen-name", "text-anchor": anchor },
        clip(quoteToken(s.token), 24)));
    }
  });
  const ux = u * WIDTH;
  root.append(svg("line", { x1: r2(ux), x2: r2(ux), y1: BAR_Y - 4, y2: BAR_Y + BAR_H + 4, class: "draw-marker" }));
  root.append(svg("path", { d: `M${r2(ux - 5)},2 L${r2(ux + 5)},2 L${r2(ux)},${BAR_Y - 3} Z`, class: "draw-marker-head" }));
  const anchor = u > 0.75 ? "end" : "start"; // beside the marker's head, never across it
  root.append(svg("text", { x: r2(ux + (anchor === "start" ? 7 : anchor === "end" ? -7 : 0)), y: 11, class: "draw-label", "text-anchor": anchor },
    `u = ${u.toFixed(4)}`));
  root.append(svg("text", { x: 0, y: HEIGHT - 1, class: "axis-label" }, "0"));
  root.append(svg("text", { x: WIDTH, y: HEIGHT - 1, class: "axis-label", "text-anchor": "end" }, "1"));
  return root;
}

function clip(text, max) {
  return text.length <= max ? text : `${text.slice(0, Math.max(1, max - 1))}…`;
}
