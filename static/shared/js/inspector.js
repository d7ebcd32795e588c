// The inspector: a token's alternatives as a small bar chart, beside the token.
//
// For each of the top-N alternatives (by the model's raw probability) two bars side by side: the
// raw probability (softmax of the logits) and the final one the token was sampled with (after
// every sampling stage; 0 when a stage removed it, which is named). The chosen token is marked in
// text, not by colour alone. Under the chart: the entropy before and after the sampling stages,
// how many tokens each stage kept, the random draw and where it fell on the cumulative bar.
// Each alternative has a "Branch" button (when the page gives an `onBranch` callback): generation
// continues from that prefix with that token forced; an alternative the grammar removed has none
// (it cannot be forced: the constraint does not allow it there).
// What the panel says follows the token's origin (origin.js): a token the draw picked shows its
// draw and the cumulative bar; one typed, branched, kept or forced by the grammar says so, with
// the model's probability of it, and shows no draw; a prompt token has no "final" column.
//
// `Inspector` renders; `InspectorController` decides when it shows (hover, focus, tap, Escape).

import { drawBar } from "./draw-bar.js";
import { alternativeRow } from "./alternative-row.js";
import { el } from "./dom.js";
import { formatProb, isEndToken, quoteToken } from "./format.js";
import { originFacts, originOf } from "./origin.js";
import { allRemovedNote, stageCounts } from "./stage-counts.js";

const GRAMMAR = "grammar"; // the stage whose removed alternatives cannot be branched on
const TAP_FOCUS_MS = 400; // how long after a finger lifts its focus may still arrive (then its click)

let unnamed = 0; // inspectors whose root has no id: each summary still gets an id of its own

export class Inspector {
  /** @param options.onBranch  (tokenIndex, alternative) → void: shows a Branch button per row */
  constructor(root, options = {}) {
    this.root = root;
    this.index = null;
    this.anchor = null;
    this.onBranch = options.onBranch ?? null;
    this.token = null;
    // The one-line summary a token is described by: unique on a page with several inspectors.
    this.summaryId = `${root.id || `inspector-${++unnamed}`}-summary`;
    root.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-branch]");
      if (!button || !this.onBranch || !this.token) return;
      const id = Number(button.dataset.branch);
      const alt = this.token.alternatives.find((a) => a.id === id);
      if (alt) this.onBranch(this.token.index, alt);
    });
  }

  get open() {
    return !this.root.hidden;
  }

  /** Shows token event `token` next to `anchor`. */
  show(token, anchor) {
    this.#render(token);
    this.root.hidden = false;
    this.index = token.index;
    if (this.anchor && this.anchor !== anchor) this.#unlink(this.anchor);
    this.anchor = anchor;
    anchor.setAttribute("aria-describedby", this.summaryId);
    anchor.setAttribute("aria-expanded", "true");
    this.place();
  }

  hide() {
    this.root.hidden = true;
    document.body.style.paddingBottom = "";
    if (this.anchor) this.#unlink(this.anchor);
    this.anchor = null;
    this.index = null;
  }

  #unlink(anchor) {
    anchor.removeAttribute("aria-describedby");
    anchor.setAttribute("aria-expanded", "false");
  }

  /** True when the panel is docked to the bottom of the screen (narrow windows, see the CSS). */
  get docked() {
    return getComputedStyle(this.root).position === "fixed";
  }

  /** Puts the panel under its token (above when there is no room below). When docked, makes
   *  room below the page and scrolls so the panel never covers its token. */
  place() {
    const style = this.root.style;
    document.body.style.paddingBottom = "";
    if (!this.anchor || !this.open) return;
    if (this.docked) {
      style.left = style.top = "";
      const height = this.root.offsetHeight;
      document.body.style.paddingBottom = `${height}px`;
      const covered = this.anchor.getBoundingClientRect().bottom - (window.innerHeight - height) + 8;
      if (covered > 0) window.scrollBy(0, covered);
      return;
    }
    const frame = this.root.offsetParent ?? document.body;
    const box = frame.getBoundingClientRect();
    const r = this.anchor.getBoundingClientRect();
    const width = this.root.offsetWidth;
    const height = this.root.offsetHeight;
    const left = Math.max(0, Math.min(r.left - box.left, frame.clientWidth - width));
    const below = r.bottom - box.top + 6;
    const above = r.top - box.top - height - 6;
    const fitsBelow = r.bottom + 6 + height <= window.innerHeight;
    style.left = `${left}px`;
    style.top = `${!fitsBelow && r.top - height - 6 >= 0 ? above : below}px`;
  }

  #render(token) {
    const origin = originOf(token);
    const facts = originFacts(token);
    const prompt = origin === "prompt";
    const title = el("p", "inspector-title");
    title.dataset.origin = origin;
    title.append(`${prompt ? "Prompt token" : "Token"} ${token.index + 1}: `, el("code", "token-text", quoteToken(token.token)), ` (id ${token.id})`);
    if (isEndToken(token)) title.append(": the end-of-sequence token, which ends the text");
    if (!prompt && origin !== "sampled" && origin !== "greedy") title.append(el("span", `origin-badge ${origin}-badge`, ` ${facts.short}`));

    const summary = el("p", "inspector-summary");
    summary.id = this.summaryId;
    if (prompt) { // a prompt token: what the model gave it after the tokens before it (prompt-surprisal.js)
      summary.append("The model gave it ", el("strong", "chosen-prob", formatProb(token.prob)),
        token.rank ? `, rank ${token.rank}` : "", token.prob === null ? " (nothing comes before it)" : "");
    } else if (origin === "sampled" || origin === "greedy") {
      summary.append("Chosen with ", el("strong", "chosen-prob", formatProb(token.prob)),
        "; model alone: ", el("span", "chosen-raw", formatProb(token.raw_prob)));
    } else { // not chosen by the draw: how it got here, and what the model made of it
      summary.append(`${facts.says}. The model gave it `, el("strong", "model-prob", formatProb(token.raw_prob)),
        "; after the sampling stages: ", el("span", "final-prob", formatProb(token.prob)));
    }

    // (about the loop's own pick: not said of a token typed, branched or kept)
    const removed = prompt || ["typed", "branch", "kept"].includes(origin) ? null : allRemovedNote(token);
    const note = removed ? el("p", "all-removed", removed) : null;

    const table = el("table", "alternatives");
    const caption = el("caption", null, `Top ${token.alternatives.length} alternatives by model probability`);
    const head = el("thead");
    const headRow = el("tr");
    // A prompt token's alternatives have one probability: the model's (no sampler stage applies to a prompt).
    const columns = prompt ? [["Token", "tok"], ["Model", "num raw"]] : [["Token", "tok"], ["Model (raw)", "num raw"], ["Sampled with (final)", "num final"]];
    if (this.onBranch) columns.push(["Branch", "act"]);
    for (const [label, cls] of columns) {
      const th = el("th", cls, label);
      th.scope = "col";
      headRow.append(th);
    }
    head.append(headRow);
    const body = el("tbody");
    let chosenListed = false;
    for (const alt of token.alternatives) {
      const chosen = alt.id === token.id;
      chosenListed ||= chosen;
      body.append(this.#row(alt, chosen, facts.mark, prompt));
    }
    if (!chosenListed && token.prob !== null) {
      // Sampling can pick a token ranked below the top N: show it anyway, marked.
      const row = this.#row({ id: token.id, token: token.token, raw_prob: token.raw_prob, prob: token.prob, removed_by: token.removed_by ?? null }, true, facts.mark, prompt);
      row.classList.add("outside");
      body.append(row);
    }
    table.append(caption, head, body);

    const details = el("dl", "step-details");
    const add = (term, value) => details.append(el("dt", null, term), el("dd", null, value));
    if (prompt && !token.entropy) add("Entropy there", token.prob === null ? "none: nothing comes before the first token" : "not reported");
    else if (token.entropy && prompt) add("Entropy there", `${num(token.entropy.before)} nats`);
    else if (token.entropy) add("Entropy, before → after sampling", `${num(token.entropy.before)} → ${num(token.entropy.after)} nats`);
    if (Array.isArray(token.stages) && token.stages.length) {
      const list = el("ol", "stage-counts");
      for (const stage of stageCounts(token.stages)) {
        const item = el("li", { "data-stage": stage.name });
        item.append(el("code", null, stage.name), ` ${stage.text}`);
        list.append(item);
      }
      const counts = el("dd");
      counts.append(list);
      details.append(el("dt", null, "Kept by each stage"), counts);
    }
    if (!prompt) add("How it got here", facts.says);
    if (origin === "sampled") add("Random draw u", num(token.draw, 4));
    else if (origin === "corrected") add("Acceptance draw u", `${num(token.draw, 4)} (rejected the draft here; see the speculative steps)`);
    else if (origin === "greedy") add("Random draw u", "none (greedy)");
    else if (origin === "draft" && typeof token.draw === "number") add("Acceptance draw u", `${num(token.draw, 4)} (accepted: u below p / q)`);
    if (typeof token.elapsed_ms === "number") add("Step time", `${num(token.elapsed_ms, 1)} ms`);
    const bar = drawBar(token);
    const where = bar ? el("figure", "draw-figure") : null;
    if (where) {
      where.append(el("figcaption", null, "Where the draw fell: final probabilities stacked in pick order"), bar);
    }

    const close = el("button", "inspector-close", "×");
    close.type = "button";
    close.setAttribute("aria-label", "Close alternatives");
    close.dataset.action = "close-inspector";

    this.root.replaceChildren(close, title, summary, ...(note ? [note] : []), table, details, ...(where ? [where] : []));
    this.root.dataset.index = String(token.index);
    this.token = token;
  }

  #row(alt, chosen, mark, prompt) {
    const row = alternativeRow(alt, chosen ? mark : null, { final: !prompt });
    if (chosen) row.setAttribute("aria-current", "true");
    if (this.onBranch) {
      const cell = el("td", "act");
      if (!chosen && alt.removed_by === GRAMMAR) {
        cell.append(el("span", "no-branch", "not allowed by the grammar"));
      } else if (!chosen) {
        const button = el("button", "branch-button", "Branch");
        button.type = "button";
        button.dataset.branch = String(alt.id);
        button.setAttribute("aria-label", `Branch: continue with ${quoteToken(alt.token)} here`);
        cell.append(button);
      }
      row.append(cell);
    }
    return row;
  }
}

function num(x, digits = 2) {
  return typeof x === "number" && Number.isFinite(x) ? x.toFixed(digits) : "–";
}

/** Shows the inspector on hover and focus, pins it on click/tap/Enter, closes it on Escape. */
export class InspectorController {
  #pinned = null;
  #hideTimer = 0;
  #returningFocus = false;
  #pressing = false; // a pointer is down on a token: its click, not its focus, opens the panel

  /** @param streamRoot  the token container; @param getToken  index → that token's event or null;
   *  @param onPin  index → void, when a token is pinned (clicked, tapped, Enter) */
  constructor(inspector, streamRoot, getToken, onPin = () => {}) {
    this.inspector = inspector;
    this.streamRoot = streamRoot;
    this.getToken = getToken;
    this.onPin = onPin;
    const root = inspector.root;
    root.addEventListener("pointerenter", () => clearTimeout(this.#hideTimer));
    root.addEventListener("pointerleave", () => this.#pinned === null && this.#hideSoon());
    root.addEventListener("click", (e) => {
      if (e.target.closest("[data-action=close-inspector]")) this.close(true);
    });
    root.addEventListener("keydown", (e) => e.key === "Escape" && this.close(true));
    // A press outside closes it, but not on a token or on a companion that works with it (the
    // guided walk's panel, marked `data-keeps-inspector`: its Next and Back point into this panel).
    document.addEventListener("pointerdown", (e) => {
      if (!root.contains(e.target) && !e.target.closest?.(".token, [data-keeps-inspector]")) this.close(false);
    });
    window.addEventListener("resize", () => inspector.place());
    // Focus from a press comes before its click; opening (and, when docked, scrolling) on that
    // focus would move the token away from under the pointer and lose the click.
    streamRoot.addEventListener("pointerdown", () => {
      this.#pressing = true;
    });
    // A finger's focus comes with the compatibility mouse events after pointerup: the press lasts
    // until then (a tap that opened the docked panel on its focus lost its own click, now and then).
    const released = (e) => setTimeout(() => {
      this.#pressing = false;
    }, e.pointerType === "mouse" ? 0 : TAP_FOCUS_MS);
    streamRoot.addEventListener("pointerup", released);
    streamRoot.addEventListener("pointercancel", released);
  }

  /** The callbacks for TokenStream. */
  get handlers() {
    return {
      // Hover previews only beside the token; a docked panel opens on focus and tap alone.
      enter: (i, el) => this.#pinned === null && !this.inspector.docked && this.#show(i, el),
      leave: () => {
        if (this.#pinned !== null || this.inspector.docked) return;
        const focused = document.activeElement?.closest?.(".token");
        if (focused && this.streamRoot.contains(focused)) this.#show(Number(focused.dataset.index), focused);
        else this.#hideSoon();
      },
      focus: (i, el) => {
        if (this.#returningFocus || this.#pressing) return;
        if (this.#pinned !== i) this.#pinned = null;
        this.#show(i, el);
      },
      blur: (i, el, next) => {
        if (this.#pinned !== null || (next && (this.inspector.root.contains(next) || next.closest?.(".token")))) return;
        this.#hideSoon();
      },
      activate: (i, el) => {
        if (this.#pinned === i) {
          this.#pinned = null;
          this.inspector.hide();
        } else {
          this.#pinned = i;
          this.#show(i, el);
          this.onPin(i);
        }
      },
      escape: () => this.close(false),
    };
  }

  /** Hides and unpins; `returnFocus` puts focus back on the token it was about. */
  close(returnFocus) {
    const anchor = this.inspector.anchor;
    this.#pinned = null;
    this.inspector.hide();
    if (returnFocus && anchor) {
      this.#returningFocus = true;
      anchor.focus();
      this.#returningFocus = false;
    }
  }

  /** Pins token `index` open (its element `el`), as a click would, and focuses it. */
  pin(index, el) {
    if (!el) return;
    this.#pinned = index;
    this.#returningFocus = true;
    el.focus({ preventScroll: false });
    this.#returningFocus = false;
    this.#show(index, el);
    this.onPin(index);
  }

  get pinned() {
    return this.#pinned;
  }

  reset() {
    clearTimeout(this.#hideTimer);
    this.#pinned = null;
    this.inspector.hide();
  }

  #show(i, el) {
    clearTimeout(this.#hideTimer);
    const token = this.getToken(i);
    if (token) this.inspector.show(token, el);
  }

  #hideSoon() {
    clearTimeout(this.#hideTimer);
    this.#hideTimer = setTimeout(() => this.#pinned === null && this.inspector.hide(), 250);
  }
}
