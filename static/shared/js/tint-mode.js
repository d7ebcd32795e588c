// The tint switch: output and prompt tokens tinted by the probability they were chosen (or given)
// with, or by the entropy of the distribution they came from: the entropy *before* sampling (the
// model's own uncertainty there, `entropy.before` in token events; a prompt token's only entropy).
// Low entropy (the model was sure) is bright, as a high probability is, on the same viridis scale;
// ENTROPY_SCALE_NATS and above is the darkest. Each token element carries `data-prob` and
// `data-entropy` (stream.js); a token without the value for the chosen tint is left untinted.

import { probColors } from "./colors.js";

export const ENTROPY_SCALE_NATS = 6; // nats: the scale's far end (a flat choice among ~400 tokens)
export const TINTS = ["probability", "entropy"];

/** {tint, strong} for an entropy in nats: 0 is the brightest, ENTROPY_SCALE_NATS and above the darkest. */
export function entropyColors(nats) {
  return probColors(1 - Math.min(1, Math.max(0, nats) / ENTROPY_SCALE_NATS));
}

/** The colours for one token element's dataset under `mode`, or null when it has no such value. */
export function tokenColors(dataset, mode) {
  const value = Number.parseFloat(mode === "entropy" ? dataset.entropy : dataset.prob);
  if (!Number.isFinite(value)) return null;
  return mode === "entropy" ? entropyColors(value) : probColors(value);
}

function tint(el, mode) {
  const colors = tokenColors(el.dataset, mode);
  el.classList.toggle("untinted", colors === null);
  if (colors === null) {
    el.style.removeProperty("--tint");
    el.style.removeProperty("--tint-strong");
  } else {
    el.style.setProperty("--tint", colors.tint);
    el.style.setProperty("--tint-strong", colors.strong);
  }
}

/** Wires the switch (radio inputs named "tint" in `root`) to the token containers and legends:
 *  [data-tint-legend=probability|entropy] show one at a time. Tokens added later are tinted too. */
export class TintSwitch {
  constructor(root, containers, legends) {
    this.mode = "probability";
    this.containers = containers;
    this.legends = legends;
    root.addEventListener("change", (e) => {
      if (e.target.name === "tint") this.set(e.target.value);
    });
    const observer = new MutationObserver((records) => {
      if (this.mode === "probability") return; // stream.js tints by probability itself
      for (const record of records) for (const node of record.addedNodes) if (node.classList?.contains("token")) tint(node, this.mode);
    });
    for (const container of containers) observer.observe(container, { childList: true });
  }

  set(mode) {
    this.mode = TINTS.includes(mode) ? mode : "probability";
    for (const legend of this.legends) legend.hidden = legend.dataset.tintLegend !== this.mode;
    for (const container of this.containers) for (const el of container.querySelectorAll(".token")) tint(el, this.mode);
  }
}

/** Fills the entropy legend's bar and ticks ([data-legend-bar], [data-legend-ticks]): 0 nats on the left. */
export function renderEntropyLegend(root) {
  const steps = 8;
  const parts = Array.from({ length: steps + 1 }, (_, i) => {
    const nats = (i / steps) * ENTROPY_SCALE_NATS;
    return `${entropyColors(nats).tint} ${((i / steps) * 100).toFixed(1)}%`;
  });
  root.querySelector("[data-legend-bar]").style.backgroundImage = `linear-gradient(to right, ${parts.join(", ")})`;
  const ticks = root.querySelector("[data-legend-ticks]");
  ticks.replaceChildren();
  for (const nats of [0, 1.5, 3, 4.5, ENTROPY_SCALE_NATS]) {
    const tick = document.createElement("span");
    tick.textContent = nats === ENTROPY_SCALE_NATS ? `≥${nats} nats` : `${nats} nats`;
    ticks.append(tick);
  }
}
