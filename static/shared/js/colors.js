// The probability colour scale: tokens are tinted by the probability they were chosen with.
//
// The hues are viridis (dark purple → teal → yellow), whose lightness rises steadily, so the
// order reads in greyscale and for every common kind of colour blindness. Each stop is mixed
// with white so dark text stays legible on it (contrast 5.3:1 at the darkest end); the strong
// colour is kept for a thin underline. The numbers are always available as text too.

const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"];
const WHITE_MIX = 0.45;

function hexToRgb(hex) {
  const n = Number.parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

const STOPS = VIRIDIS.map(hexToRgb);

function rgb([r, g, b]) {
  return `rgb(${Math.round(r)}, ${Math.round(g)}, ${Math.round(b)})`;
}

/** The scale's colour at probability p (clamped to [0, 1]) as [r, g, b]. */
export function scaleRgb(p) {
  const x = Math.min(1, Math.max(0, Number.isFinite(p) ? p : 0)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const t = x - i;
  return STOPS[i].map((c, k) => c + (STOPS[i + 1][k] - c) * t);
}

/** {tint, strong}: the light background for text, and the full-strength colour for accents. */
export function probColors(p) {
  const strong = scaleRgb(p);
  const tint = strong.map((c) => c * (1 - WHITE_MIX) + 255 * WHITE_MIX);
  return { tint: rgb(tint), strong: rgb(strong) };
}

/** A CSS linear-gradient of the tint scale, low probability on the left. */
export function tintGradient() {
  const parts = VIRIDIS.map((_, i) => {
    const p = i / (VIRIDIS.length - 1);
    return `${probColors(p).tint} ${(p * 100).toFixed(1)}%`;
  });
  return `linear-gradient(to right, ${parts.join(", ")})`;
}

/** Fills a legend element: a gradient bar with labelled ticks (0 %, 25 %, … 100 %). */
export function renderLegend(root) {
  const bar = root.querySelector("[data-legend-bar]");
  bar.style.backgroundImage = tintGradient();
  const ticks = root.querySelector("[data-legend-ticks]");
  ticks.replaceChildren();
  for (const p of [0, 0.25, 0.5, 0.75, 1]) {
    const tick = document.createElement("span");
    tick.textContent = `${p * 100}%`;
    ticks.append(tick);
  }
}
