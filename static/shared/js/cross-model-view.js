// Two models' outputs side by side, aligned on text offsets (cross-model-align.js): one row per
// aligned span, each model's tokens in it (tinted by the probability each was chosen with), rows
// whose texts differ marked, the first difference named, and under it how each model rated the
// other's token there (cross-rating.js). Used by the live comparison and the saved comparison.
//
// Markup (templates/_cross_model.html): a section [data-cross-model] holding
// [data-testid=cross-divergence], [data-testid=cross-rating] and table[data-testid=cross-aligned].

import { alignStreams, divergentSpan, firstDifference } from "./cross-model-align.js";
import { rateAcross } from "./cross-rating.js";
import { probColors } from "./colors.js";
import { el } from "./dom.js";
import { formatProb, quoteToken, visibleWhitespace } from "./format.js";

export class CrossModelView {
  constructor(root) {
    this.root = root;
    this.summary = root.querySelector("[data-testid=cross-divergence]");
    this.ratings = root.querySelector("[data-testid=cross-rating]");
    this.table = root.querySelector("table[data-testid=cross-aligned]");
    this.sequence = 0;
    this.rater = null; // (span index) → rates there, once the runs have ended (`rate`)
    this.table.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-rate-span]");
      if (button && this.rater) this.rater(Number(button.dataset.rateSpan));
    });
  }

  /** Hidden, and nothing to rate until `rate` is called for new runs. */
  hide() {
    this.root.hidden = true;
    this.rater = null;
    this.sequence++;
    this.ratings.replaceChildren();
  }

  /** Draws `sides` ([{label, model, tokens}], two; tokens: sample 0's token events in order)
   *  aligned. Returns {spans, offset, pieces} for `rate`. */
  show(sides) {
    this.root.hidden = false;
    const pieces = sides.map((side) => side.tokens.map((t) => t?.text ?? ""));
    const spans = alignStreams(pieces[0], pieces[1]);
    const texts = pieces.map((p) => p.join(""));
    const offset = firstDifference(texts[0], texts[1]);
    const head = el("tr");
    head.append(el("th", { scope: "col" }, "Characters"), ...sides.map((s) => el("th", { scope: "col" }, s.label)));
    this.table.tHead.replaceChildren(head);
    this.table.tBodies[0].replaceChildren(...spans.map((span, index) => this.#row(span, index, sides, offset)));
    this.summary.textContent = describeDifference(sides, texts, offset);
    return { spans, offset, pieces };
  }

  /** Asks both models for their rating of the other's token at the first difference (completion
   *  runs only) and shows them; each differing row's "Rate" button asks the same there. Only the
   *  newest call's answer is drawn. */
  rate(client, prompt, sides, aligned) {
    const rated = sides.map((s, i) => ({ label: s.label, model: s.model, pieces: aligned.pieces[i] }));
    this.rater = (index) => this.#rateAt(client, prompt, rated, aligned.spans, index);
    for (const button of this.table.querySelectorAll("button[data-rate-span]")) button.hidden = false;
    this.ratings.replaceChildren();
    const first = divergentSpan(aligned.spans, aligned.offset);
    return first === null ? Promise.resolve() : this.rater(first);
  }

  async #rateAt(client, prompt, sides, spans, index) {
    const ticket = ++this.sequence;
    const span = spans[index];
    this.ratings.dataset.span = String(index);
    this.ratings.replaceChildren(el("li", null, `Asking each model how likely it found the other's token at characters ${span.start}–${span.end}…`));
    const sentences = await rateAcross(client, { prompt, sides, spans, index });
    if (ticket !== this.sequence) return;
    this.ratings.replaceChildren(...sentences.map((text) => el("li", null, text)));
  }

  #row(span, index, sides, offset) {
    const first = offset !== null && span.start <= offset && (offset < span.end || span.start === span.end);
    const tr = el("tr", { className: [span.same ? "" : "differs", first ? "first-divergence" : ""].join(" ").trim() || null });
    const where = el("th", { scope: "row" }, `${span.start}–${span.end}`);
    if (first) where.append(" ", el("span", "divergence-mark", "texts part"));
    if (!span.same) {
      const button = el("button", { type: "button", className: "link-button", "data-rate-span": index, hidden: !this.rater }, "Rate");
      button.setAttribute("aria-label", `How each model rated the other's token at characters ${span.start}–${span.end}`);
      where.append(" ", button);
    }
    tr.append(where);
    for (const [i, key] of [[0, "a"], [1, "b"]]) {
      const cell = el("td", "cell");
      for (const t of span[key]) cell.append(tokenChip(sides[i].tokens[t]), " ");
      tr.append(cell);
    }
    return tr;
  }
}

/** One token: its text piece (its own token text, muted, when the piece is empty: part of a
 *  character, or an end token), tinted by the probability it was chosen with. */
function tokenChip(token) {
  const piece = token.text ?? "";
  const chip = el("span", piece ? "token" : "token piece", piece ? visibleWhitespace(piece) : token.token);
  chip.title = `${quoteToken(token.token)} · id ${token.id} · p ${formatProb(token.prob)}`;
  chip.dataset.prob = String(token.prob);
  const { tint, strong } = probColors(token.prob);
  chip.style.setProperty("--tint", tint);
  chip.style.setProperty("--tint-strong", strong);
  return chip;
}

/** The first difference in words. */
function describeDifference(sides, texts, offset) {
  if (offset === null) return `${sides[0].label} and ${sides[1].label} wrote the same text.`;
  const after = texts[0].slice(Math.max(0, offset - 20), offset);
  const next = (text) => (offset < text.length ? quoteToken(text.slice(offset, offset + 12)) : "nothing more (it stopped)");
  return `The texts part at character ${offset + 1}${after ? `, after ${quoteToken(after)}` : ""}: ` +
    `${sides[0].label} went on with ${next(texts[0])}, ${sides[1].label} with ${next(texts[1])}. ` +
    "Rows marked differ; below the first one each later row compares different contexts.";
}
