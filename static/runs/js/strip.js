// A strip chart under the output: per token, the probability it was chosen with (bar height)
// and the step's entropy before sampling (line). Small SVG of our own; clicking a bar selects
// that token.

import { originFacts, originOf } from "../../shared/js/origin.js";

const SVG = "http://www.w3.org/2000/svg";

function node(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

export function drawStrip(root, tokens, select) {
  root.replaceChildren();
  if (!tokens.length) return;
  const width = Math.max(300, tokens.length * 6);
  const height = 48;
  const step = width / tokens.length;
  const svg = node("svg", { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", class: "strip-chart" });
  const maxEntropy = Math.max(1e-9, ...tokens.map((t) => t.entropy?.before ?? 0));
  let path = "";
  tokens.forEach((t, i) => {
    const h = Math.max(1, t.prob * (height - 2));
    const bar = node("rect", { x: i * step + 0.5, y: height - h, width: Math.max(1, step - 1), height: h, class: "strip-bar" });
    bar.append(node("title", {}));
    const origin = originOf(t); // (a token no draw chose says how it got there)
    const how = origin === "sampled" || origin === "greedy" ? "" : ` (${originFacts(t).short})`;
    bar.firstChild.textContent = `token ${i}: ${(t.prob * 100).toFixed(1)}%${how}`;
    bar.addEventListener("click", () => select(i));
    svg.append(bar);
    const e = t.entropy?.before;
    if (typeof e === "number") {
      path += `${path ? "L" : "M"}${(i + 0.5) * step},${height - (e / maxEntropy) * (height - 2) - 1}`;
    }
  });
  if (path) svg.append(node("path", { d: path, class: "strip-entropy" }));
  root.append(svg);
}
