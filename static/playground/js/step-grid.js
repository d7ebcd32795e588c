// The step grid (SVG): one column per decode step that had one of this page's lanes, one row per
// lane; a filled cell is a token that lane got in that step, a ✕ after a lane's last step marks
// where it ended and freed its slot. The band above counts the rows of each step's batch (every
// client's, from the `batch` field), up to the worker's batch size. Clicking a cell selects
// that token. Every number is also in text: cell titles and the summary under the chart.

import { r2, svg, titled } from "../../shared/js/svg.js";

const MIN_CELL = 7; // px per step column: wider for short runs, scrolls sideways for long ones
const MAX_CELL = 22;
const FIT_WIDTH = 720; // px the columns of a short run spread over
const ROW = 16; // px per lane
const BAND = 34; // px of the rows-per-step band
const LEFT = 52; // px for lane labels

export class StepGrid {
  /** @param root  the chart's box; @param summary  the text summary's element;
   *  @param onSelect  (lane, tokenIndex) → void when a cell is clicked */
  constructor(root, summary, onSelect) {
    this.root = root;
    this.summary = summary;
    root.addEventListener("click", (e) => {
      const cell = e.target.closest?.("[data-lane][data-index]");
      if (cell) onSelect(Number(cell.dataset.lane), Number(cell.dataset.index));
    });
  }

  clear(message = "") {
    this.root.replaceChildren();
    this.summary.textContent = message;
  }

  /** Draws `log` (a StepLog) for lanes 1..laneCount. */
  render(log, laneCount) {
    const columns = log.columns();
    if (!columns.length) {
      this.clear("No step reported yet.");
      return;
    }
    const cell = Math.max(MIN_CELL, Math.min(MAX_CELL, Math.floor(FIT_WIDTH / columns.length)));
    const width = LEFT + columns.length * cell + cell * 2;
    const height = BAND + laneCount * ROW + 18;
    const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": "step-grid-summary", class: "step-grid-svg" });
    const x = (i) => LEFT + i * cell;
    const scale = Math.max(log.maxBatch ?? 0, log.peakRows, 1);
    chart.append(svg("text", { x: 2, y: 12, class: "grid-label" }, "rows"));
    chart.append(svg("line", { x1: LEFT, x2: width, y1: BAND - 2, y2: BAND - 2, class: "grid-axis" }));
    const position = new Map(columns.map((step, i) => [step, i]));
    columns.forEach((step, i) => {
      const entry = log.steps.get(step);
      const h = ((entry.rows ?? 0) / scale) * (BAND - 6);
      chart.append(titled(svg("rect", { x: x(i), y: r2(BAND - 2 - h), width: cell - 1, height: r2(h), class: "rows-bar" }),
        `step ${step}: ${entry.rows} rows, ${entry.requests} requests`));
    });
    for (let lane = 1; lane <= laneCount; lane++) {
      const y = BAND + (lane - 1) * ROW;
      chart.append(svg("text", { x: 2, y: y + ROW - 4, class: "grid-label" }, `lane ${lane}`));
      const steps = log.laneSteps.get(lane) ?? [];
      steps.forEach((step, index) => {
        const i = position.get(step);
        const entry = log.steps.get(step);
        chart.append(titled(
          svg("rect", { x: x(i), y: y + 2, width: cell - 1, height: ROW - 4, class: `lane-cell lane-${((lane - 1) % 8) + 1}`, "data-lane": lane, "data-index": index }),
          `lane ${lane}, token ${index + 1}: step ${step} (${entry.rows} rows, ${entry.requests} requests)`));
      });
      const held = log.slots.get(lane);
      if (held?.ended && steps.length) {
        const i = position.get(steps.at(-1)) + 1;
        chart.append(titled(svg("text", { x: x(i) + 1, y: y + ROW - 4, class: "freed-mark" }, "✕"),
          `lane ${lane} ended after step ${steps.at(-1)}: slot ${held.slots.join(", ")} freed`));
      }
    }
    if (columns.length * cell >= 140) {
      chart.append(svg("text", { x: LEFT, y: height - 4, class: "grid-label" }, `step ${columns[0]}`));
      chart.append(svg("text", { x: width - 4, y: height - 4, class: "grid-label", "text-anchor": "end" }, `step ${columns.at(-1)}`));
    } else {
      chart.append(svg("text", { x: LEFT, y: height - 4, class: "grid-label" }, `steps ${columns[0]}–${columns.at(-1)}`));
    }
    this.root.replaceChildren(chart);
    this.summary.textContent = describe(log, laneCount, columns);
  }
}

/** The grid in words: the steps spanned, the most rows in one step, each lane's steps and end. */
function describe(log, laneCount, columns) {
  const lanes = [];
  for (let lane = 1; lane <= laneCount; lane++) {
    const steps = log.laneSteps.get(lane) ?? [];
    if (!steps.length) {
      lanes.push(`lane ${lane}: no step yet`);
      continue;
    }
    const ended = log.slots.get(lane)?.ended ? `, ended after step ${steps.at(-1)}` : "";
    lanes.push(`lane ${lane}: ${steps.length} steps from ${steps[0]}${ended}`);
  }
  const shared = columns.filter((step) => log.steps.get(step).lanes.size > 1).length;
  return `Steps ${columns[0]}–${columns.at(-1)}; ${shared} of ${columns.length} had two or more lanes; ` +
    `at most ${log.peakRows} rows in one step. ${lanes.join("; ")}.`;
}
