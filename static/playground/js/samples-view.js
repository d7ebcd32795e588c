// The n-samples view: every sample of one request, one row each, aligned by token. Tokens shared
// with sample 1 up to where a sample first differs are muted; the first differing token is marked
// "⑂" and outlined, so the eye finds where the samples diverge. Text via textContent only.

import { probColors } from "../../shared/js/colors.js";
import { describeReason, visibleWhitespace } from "../../shared/js/format.js";

/** The first index where two id lists differ (the shorter length when one is a prefix). */
export function divergence(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? null : n;
}

export class SamplesView {
  constructor(root) {
    this.root = root;
  }

  clear() {
    this.root.replaceChildren();
    this.root.closest("section")?.toggleAttribute("data-empty", true);
  }

  /** Draws the run's samples (only when it has more than one). */
  render(run) {
    const samples = run.samples.map((s) => (s ?? []).filter(Boolean));
    if (samples.length < 2) {
      this.clear();
      return;
    }
    this.root.closest("section")?.toggleAttribute("data-empty", false);
    const ids = samples.map((s) => s.map((t) => t.id));
    const doneSamples = run.done?.samples ?? [];
    const list = document.createElement("ol");
    list.className = "samples";
    samples.forEach((tokens, s) => {
      const other = s === 0 ? ids[1] : ids[0];
      const at = divergence(ids[s], other);
      const item = document.createElement("li");
      item.className = "sample";
      item.dataset.sample = String(s);
      item.dataset.diverge = at === null ? "" : String(at);
      const head = document.createElement("p");
      head.className = "sample-head";
      const info = doneSamples.find((d) => d.sample === s);
      const where = at === null ? "identical to sample " + (s === 0 ? 2 : 1)
        : `differs from sample ${s === 0 ? 2 : 1} at token ${at + 1}`;
      head.textContent = `Sample ${s + 1} (seed + ${s}): ${tokens.length} tokens, ${where}` +
        (info ? `; ${describeReason(info.reason).split(" — ")[0]}` : "");
      const line = document.createElement("p");
      line.className = "sample-tokens";
      tokens.forEach((t, i) => {
        const span = document.createElement("span");
        span.className = "sample-token";
        if (at !== null && i < at) span.classList.add("shared");
        if (i === at) {
          span.classList.add("diverge");
          span.title = "first token that differs";
        }
        span.style.setProperty("--tint", probColors(t.prob).tint);
        span.textContent = t.text === "" ? "□" : visibleWhitespace(t.text);
        line.append(span);
      });
      item.append(head, line);
      list.append(item);
    });
    this.root.replaceChildren(list);
  }
}
