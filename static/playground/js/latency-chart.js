// Per-token latency with and without the KV cache: the latest run of each kind, one line each
// (`elapsed_ms` of every token event against its index). With the cache each step feeds one
// token; without it every step recomputes the whole sequence, so its line climbs. The lines
// differ by style and marker (solid/circles vs dashed/squares) and are labelled in text.

import { formatMs } from "../../shared/js/format.js";
import { r2, svg, titled } from "../../shared/js/svg.js";

const W = 640;
const H = 170;
const PAD = { left: 48, right: 12, top: 12, bottom: 26 };

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export class LatencyChart {
  constructor(root, summary) {
    this.root = root;
    this.summary = summary;
    this.series = { cached: null, uncached: null };
  }

  /** Records a finished run's per-token times (sample 0) under its kind. */
  record(run) {
    const values = run.tokens.filter(Boolean).map((t) => t.elapsed_ms).filter((v) => typeof v === "number");
    if (!values.length) return;
    const kind = run.request.use_cache === false ? "uncached" : "cached";
    this.series[kind] = { values, ttft: run.done?.timing?.time_to_first_token_ms ?? null };
    this.render();
  }

  render() {
    const present = Object.entries(this.series).filter(([, s]) => s);
    this.root.closest("section")?.toggleAttribute("data-empty", present.length === 0);
    if (!present.length) {
      this.root.replaceChildren();
      this.summary.textContent = "";
      return;
    }
    const maxN = Math.max(...present.map(([, s]) => s.values.length));
    const maxMs = Math.max(1, ...present.flatMap(([, s]) => s.values));
    const plotW = W - PAD.left - PAD.right;
    const plotH = H - PAD.top - PAD.bottom;
    const x = (i) => PAD.left + (maxN === 1 ? plotW / 2 : (plotW * i) / (maxN - 1));
    const y = (ms) => PAD.top + plotH * (1 - ms / maxMs);
    const parts = present.map(([kind, s]) => `${kind === "cached" ? "with the KV cache" : "without it"}: median ${formatMs(median(s.values))} per token over ${s.values.length} tokens`);
    const label = `Per-token latency. ${parts.join("; ")}.`;
    const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "latency-chart", role: "img", "aria-label": label });
    for (const frac of [0, 0.5, 1]) {
      const ms = maxMs * frac;
      chart.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: r2(y(ms)), y2: r2(y(ms)), class: "grid" }));
      chart.append(svg("text", { x: PAD.left - 4, y: r2(y(ms) + 3), class: "axis-label", "text-anchor": "end" }, formatMs(ms)));
    }
    chart.append(svg("text", { x: PAD.left, y: H - 6, class: "axis-label" }, "token 1"));
    chart.append(svg("text", { x: W - PAD.right, y: H - 6, class: "axis-label", "text-anchor": "end" }, `token ${maxN}`));
    for (const [kind, s] of present) {
      const group = svg("g", { class: `series-group ${kind}` });
      group.dataset.kind = kind;
      group.dataset.count = String(s.values.length);
      group.append(svg("polyline", { points: s.values.map((v, i) => `${r2(x(i))},${r2(y(v))}`).join(" "), class: `series ${kind}` }));
      s.values.forEach((v, i) => {
        const mark = kind === "cached"
          ? svg("circle", { cx: r2(x(i)), cy: r2(y(v)), r: 2.5, class: `mark ${kind}` })
          : svg("rect", { x: r2(x(i) - 2.5), y: r2(y(v) - 2.5), width: 5, height: 5, class: `mark ${kind}` });
        mark.dataset.ms = String(v);
        titled(mark, `token ${i + 1}, ${kind === "cached" ? "KV cache" : "no KV cache"}: ${v.toFixed(1)} ms`);
        group.append(mark);
      });
      chart.append(group);
    }
    this.root.replaceChildren(chart);
    this.summary.textContent = `${parts.join("; ")}.`;
    if (present.length === 1) {
      this.summary.textContent += present[0][0] === "cached"
        ? " Tick “No KV cache” and generate again to compare."
        : " Untick “No KV cache” and generate again to compare.";
    }
  }
}
