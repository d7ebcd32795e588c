// The watched tokens' chart: for each watched token, its probability at every step, raw (dashed,
// before any stage) and final (solid, what it was drawn from), one colour and marker shape per
// token. Hovering a column, clicking it or, with focus on the chart, ←/→/Home/End select a step:
// the readout gives every watched token's numbers there. Under the chart, one sentence per
// token says why it was (or never was) chosen (watch-facts.js).

import { r2, svg } from "../../shared/js/svg.js";
import { CHART_H as H, CHART_W as W, hitColumn, showFocusableChart } from "./chart-columns.js";
import { linePoints, stepText, watchSeries, whyText } from "./watch-facts.js";

const PAD = { left: 34, right: 12, top: 10, bottom: 20 };

export class WatchChart {
  /** @param root  the section's container: holds [data-watch-chart], [data-watch-readout] and
   *  [data-watch-why]; @param onSelect  index → void (the page pins that token) */
  constructor(root, onSelect) {
    this.root = root;
    this.chart = root.querySelector("[data-watch-chart]");
    this.readout = root.querySelector("[data-watch-readout]");
    this.why = root.querySelector("[data-watch-why]");
    this.onSelect = onSelect;
    this.series = [];
    this.n = 0;
    this.selected = null;
    this.chart.addEventListener("click", (e) => {
      const hit = e.target.closest?.("[data-index]");
      if (hit) this.#choose(Number(hit.dataset.index));
    });
    this.chart.addEventListener("mouseover", (e) => {
      const hit = e.target.closest?.("[data-index]");
      if (hit) this.#show(Number(hit.dataset.index));
    });
    this.chart.addEventListener("keydown", (e) => {
      if (!this.n) return;
      const at = this.selected ?? -1;
      const moves = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: this.n - 1 };
      if (!(e.key in moves)) return;
      e.preventDefault();
      this.#choose(Math.max(0, Math.min(this.n - 1, moves[e.key])), true);
    });
  }

  /** Draws the chart for a run's token events (sample 0); hidden when nothing was watched. */
  render(tokens) {
    const events = tokens.filter(Boolean);
    this.series = watchSeries(events);
    this.n = events.length;
    this.selected = null;
    this.root.toggleAttribute("data-empty", this.series.length === 0);
    this.why.replaceChildren(...this.series.map((s, k) => {
      const item = document.createElement("li");
      item.className = `watch-why w${k}`;
      item.textContent = whyText(s);
      return item;
    }));
    this.readout.textContent = this.series.length ? "Select a step (hover, click, or focus the chart and press ← →) to read its numbers." : "";
    this.#draw();
  }

  /** Marks step `index` (the token pinned elsewhere on the page) and shows its numbers. */
  select(index) {
    if (!this.n || index === null || index >= this.n) return;
    this.selected = index;
    this.#show(index);
    this.#draw();
  }

  /** Selects a step and pins its token; from the keyboard, focus stays on the chart (pinning
   *  focuses the token) so the arrows keep moving along it. */
  #choose(index, fromKeyboard = false) {
    this.select(index);
    this.onSelect(index);
    if (fromKeyboard) this.chart.querySelector(".strip-focus")?.focus({ preventScroll: true });
  }

  #show(index) {
    this.readout.textContent = `Step ${index + 1}: ${this.series.map((s) => stepText(s, index)).join("; ")}.`;
  }

  #draw() {
    const refocus = this.chart.contains(document.activeElement);
    if (!this.series.length || !this.n) {
      this.chart.replaceChildren();
      return;
    }
    const plotW = W - PAD.left - PAD.right;
    const plotH = H - PAD.top - PAD.bottom;
    const step = plotW / this.n;
    const x = (i) => PAD.left + step * (i + 0.5);
    const y = (p) => PAD.top + plotH * (1 - p);
    const names = this.series.map((s) => JSON.stringify(s.token)).join(", ");
    const label = `Chart of the watched tokens ${names} over ${this.n} steps: raw probability dashed, final solid. ` +
      "Use the left and right arrow keys to read a step.";
    const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "watch-chart", role: "img", "aria-label": label });
    for (const p of [0, 0.5, 1]) {
      chart.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: r2(y(p)), y2: r2(y(p)), class: "grid" }));
      chart.append(svg("text", { x: PAD.left - 4, y: r2(y(p) + 3), class: "axis-label", "text-anchor": "end" }, `${p * 100}%`));
    }
    if (this.selected !== null) {
      chart.append(svg("rect", { x: r2(x(this.selected) - step / 2), y: PAD.top, width: r2(step), height: plotH, class: "selected-column" }));
    }
    this.series.forEach((s, k) => {
      for (const [key, kind] of [["raw", "raw"], ["final", "final"]]) {
        for (const points of linePoints(s, key, x, y)) {
          const line = svg("polyline", { points, class: `series ${kind} w${k}` });
          line.dataset.id = String(s.id);
          chart.append(line);
        }
      }
      s.steps.forEach((st, i) => {
        if (st?.chosen) chart.append(svg("circle", { cx: r2(x(i)), cy: r2(y(st.final)), r: 3, class: `dot chosen w${k}` }));
      });
    });
    for (let i = 0; i < this.n; i += 1) {
      chart.append(hitColumn(i, x(i), step, H, `Step ${i + 1}: ${this.series.map((s) => stepText(s, i)).join("; ")}`));
    }
    showFocusableChart(this.chart, chart, label, refocus);
  }
}
