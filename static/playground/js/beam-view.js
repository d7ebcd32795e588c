// The beam search view: the beam tree as an SVG, one column per step. Kept beams are solid boxes,
// pruned proposals dashed and faded, finished hypotheses double-outlined; a line joins each
// proposal to the beam it extends. Every box shows its token and cumulative log-probability, and
// the final hypotheses are listed with their scores under the chart.

import { formatSigned, quoteToken } from "../../shared/js/format.js";
import { r2, svg, titled } from "../../shared/js/svg.js";

const COL = 118;
const ROW = 30;
const BOX_W = 104;
const BOX_H = 24;
const TOP = 22;

function clip(text, max = 13) {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

export class BeamView {
  constructor(root, list) {
    this.root = root;
    this.list = list;
  }

  clear() {
    this.root.replaceChildren();
    this.list.replaceChildren();
    this.root.closest("section")?.toggleAttribute("data-empty", true);
  }

  render(run) {
    const steps = run.beamSteps.filter(Boolean);
    if (!steps.length) {
      this.clear();
      return;
    }
    this.root.closest("section")?.toggleAttribute("data-empty", false);
    const rows = Math.max(...steps.map((s) => s.beams.length + s.pruned.length + s.finished.length));
    const width = COL * (steps.length + 1) + 10;
    const height = TOP + ROW * rows + 6;
    const kept = steps.reduce((a, s) => a + s.beams.length, 0);
    const pruned = steps.reduce((a, s) => a + s.pruned.length, 0);
    const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "beam-tree", role: "img",
      "aria-label": `Beam tree over ${steps.length} steps: ${kept} kept beams, ${pruned} pruned proposals.` });
    const y = (row) => TOP + row * ROW;
    chart.append(svg("text", { x: 4, y: 14, class: "axis-label" }, "prompt"));
    chart.append(svg("rect", { x: 4, y: y(0), width: BOX_W - 20, height: BOX_H, class: "beam kept root" }));
    let previous = [{ row: 0 }]; // the prompt is beam 0 before the first step
    steps.forEach((step, s) => {
      const x = COL * (s + 1);
      chart.append(svg("text", { x, y: 14, class: "axis-label" }, `step ${s + 1}`));
      const entries = [
        ...step.beams.map((b) => ({ ...b, kind: "kept" })),
        ...step.finished.map((b) => ({ ...b, kind: "finished" })),
        ...step.pruned.map((b) => ({ ...b, kind: "pruned" })),
      ];
      const next = [];
      entries.forEach((entry, row) => {
        const parent = previous[entry.parent] ?? previous[0];
        const px = s === 0 ? 4 + BOX_W - 20 : COL * s + BOX_W;
        const py = y(parent.row) + BOX_H / 2;
        chart.append(svg("path", {
          d: `M${px},${r2(py)} C${px + 8},${r2(py)} ${x - 8},${r2(y(row) + BOX_H / 2)} ${x},${r2(y(row) + BOX_H / 2)}`,
          class: `link ${entry.kind}`,
        }));
        const group = svg("g", { class: `beam-node ${entry.kind}` });
        group.dataset.kind = entry.kind;
        group.dataset.step = String(s);
        group.dataset.cumLogprob = String(entry.cum_logprob);
        group.append(svg("rect", { x, y: y(row), width: BOX_W, height: BOX_H, rx: 3, class: `beam ${entry.kind}` }));
        group.append(svg("text", { x: x + 4, y: y(row) + 10, class: "beam-token" }, clip(quoteToken(entry.token))));
        group.append(svg("text", { x: x + 4, y: y(row) + 21, class: "beam-score" },
          `${formatSigned(entry.cum_logprob)}${entry.kind === "pruned" ? " ✕" : entry.kind === "finished" ? " ■" : ""}`));
        titled(group, `Step ${s + 1}, ${entry.kind}: ${quoteToken(entry.token)} extends beam ${entry.parent + 1}; ` +
          `log p ${formatSigned(entry.logprob)}, cumulative ${formatSigned(entry.cum_logprob)}`);
        chart.append(group);
        if (entry.kind === "kept") next.push({ row });
      });
      previous = next;
    });
    this.root.replaceChildren(chart);

    this.list.replaceChildren();
    for (const [i, beam] of (run.done?.beams ?? []).entries()) {
      const item = document.createElement("li");
      item.className = "hypothesis";
      const text = run.done.samples?.[i]?.text ?? "";
      item.textContent = `${quoteToken(text)} — score ${formatSigned(beam.score, 3)}, log p ${formatSigned(beam.cum_logprob)}` +
        (beam.reason ? `, ${beam.reason}` : "");
      this.list.append(item);
    }
  }
}
