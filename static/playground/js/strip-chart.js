// A strip chart across the output: for each generated token, the probability it was chosen with
// (solid line, dots, left scale 0–100 %) and the step's entropy before sampling (dashed line,
// right scale in nats). Clicking a column selects that token; with focus on the chart, ←/→
// move the selection and Home/End jump to the ends. Two series differ by line style and marker,
// not by colour alone.

import { formatProb } from "../../shared/js/format.js";
import { originFacts, originOf, wasDrawn } from "../../shared/js/origin.js";
import { r2, svg } from "../../shared/js/svg.js";
import { CHART_H as H, CHART_W as W, hitColumn, showFocusableChart } from "./chart-columns.js";

const PAD = { left: 34, right: 40, top: 10, bottom: 20 };

export class StripChart {
  /** @param root  a container; @param onSelect  index → void */
  constructor(root, onSelect) {
    this.root = root;
    this.onSelect = onSelect;
    this.tokens = [];
    this.selected = null;
    root.addEventListener("click", (e) => {
      const hit = e.target.closest?.("[data-index]");
      if (hit) this.#choose(Number(hit.dataset.index));
    });
    root.addEventListener("keydown", (e) => {
      if (!this.tokens.length) return;
      const last = this.tokens.length - 1;
      const at = this.selected ?? -1;
      const moves = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: last };
      if (!(e.key in moves)) return;
      e.preventDefault();
      this.#choose(Math.max(0, Math.min(last, moves[e.key])), false);
    });
  }

  #choose(index, fromPointer = true) {
    this.select(index);
    this.onSelect(index, fromPointer);
  }

  /** Draws the chart for these token events. */
  render(tokens) {
    this.tokens = tokens.filter(Boolean);
    this.#draw();
  }

  select(index) {
    this.selected = index;
    this.#draw();
  }

  #draw() {
    const refocus = this.root.contains(document.activeElement);
    const tokens = this.tokens;
    const n = tokens.length;
    this.root.closest("section")?.toggleAttribute("data-empty", n === 0);
    if (!n) {
      this.root.replaceChildren();
      return;
    }
    const plotW = W - PAD.left - PAD.right;
    const plotH = H - PAD.top - PAD.bottom;
    const step = plotW / n;
    const x = (i) => PAD.left + step * (i + 0.5);
    const yProb = (p) => PAD.top + plotH * (1 - p);
    const maxEntropy = Math.max(1, ...tokens.map((t) => t.entropy?.before ?? 0));
    const yEnt = (h) => PAD.top + plotH * (1 - h / maxEntropy);
    const meanProb = tokens.reduce((a, t) => a + t.prob, 0) / n;
    const label = `Strip chart of ${n} tokens: chosen-token probability (mean ${formatProb(meanProb)}) and entropy ` +
      `(up to ${maxEntropy.toFixed(2)} nats). Use the left and right arrow keys to select a token.`;
    const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "strip-chart", role: "img", "aria-label": label });

    // Axes and gridlines.
    for (const p of [0, 0.5, 1]) {
      chart.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: r2(yProb(p)), y2: r2(yProb(p)), class: "grid" }));
      chart.append(svg("text", { x: PAD.left - 4, y: r2(yProb(p) + 3), class: "axis-label", "text-anchor": "end" }, `${p * 100}%`));
    }
    chart.append(svg("text", { x: W - PAD.right + 4, y: PAD.top + 3, class: "axis-label" }, `${maxEntropy.toFixed(1)}`));
    chart.append(svg("text", { x: W - PAD.right + 4, y: r2(yEnt(0) + 3), class: "axis-label" }, "0 nats"));

    if (this.selected !== null && this.selected < n) {
      chart.append(svg("rect", { x: r2(x(this.selected) - step / 2), y: PAD.top, width: r2(step), height: plotH, class: "selected-column" }));
    }

    const entropyPoints = tokens.map((t, i) => `${r2(x(i))},${r2(yEnt(t.entropy?.before ?? 0))}`).join(" ");
    chart.append(svg("polyline", { points: entropyPoints, class: "series entropy" }));
    const probPoints = tokens.map((t, i) => `${r2(x(i))},${r2(yProb(t.prob))}`).join(" ");
    chart.append(svg("polyline", { points: probPoints, class: "series prob" }));
    tokens.forEach((t, i) => {
      chart.append(svg("circle", { cx: r2(x(i)), cy: r2(yProb(t.prob)), r: Math.min(3, Math.max(1.5, step / 4)), class: "dot prob" }));
    });

    // Hit areas: one column per token.
    tokens.forEach((t, i) => {
      const entropy = t.entropy ? `, entropy ${t.entropy.before.toFixed(2)} nats` : "";
      // (only a drawn token was "chosen with" its probability: any other says how it got there)
      const how = wasDrawn(t) || originOf(t) === "greedy" ? "chosen with" : `${originFacts(t).short}, final probability`;
      chart.append(hitColumn(i, x(i), step, H, `Token ${i + 1} ${JSON.stringify(t.text)}: ${how} ${formatProb(t.prob)}${entropy}`));
    });

    showFocusableChart(this.root, chart, label, refocus);
  }
}
