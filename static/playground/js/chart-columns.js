// What a chart with one column per step shares (the strip chart, the watched tokens' chart): the
// hit columns a pointer selects (data-index, a title in words) and the focusable group the chart
// is shown in, which the arrow keys move through.

import { r2, svg, titled } from "../../shared/js/svg.js";

export const CHART_W = 640; // both charts' viewBox, side by side on the page at one size
export const CHART_H = 132;

/** One step's hit column, the chart's full height: `x` its centre, `width` a step's width. */
export function hitColumn(index, x, width, height, title) {
  const hit = svg("rect", { x: r2(x - width / 2), y: 0, width: r2(width), height, class: "hit" });
  hit.dataset.index = String(index);
  return titled(hit, title);
}

/** Shows `chart` in `container` inside a focusable group named `label`; `refocus`: the focus was
 *  in the chart before it was redrawn, and goes back to it. */
export function showFocusableChart(container, chart, label, refocus) {
  const focusable = document.createElement("div");
  focusable.className = "strip-focus";
  focusable.tabIndex = 0;
  focusable.setAttribute("role", "group");
  focusable.setAttribute("aria-label", label);
  focusable.append(chart);
  container.replaceChildren(focusable);
  if (refocus) focusable.focus();
}
