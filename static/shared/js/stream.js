// The output: one focusable element per generated token, tinted by the probability it was chosen
// with. Token text goes in with textContent only.
//
// Keyboard: the output is one tab stop (a roving tabindex); arrow keys move between tokens,
// Home/End jump to the ends. The view reports pointer, focus and tap interest through callbacks;
// what to show is the inspector's business.
//
// Whitespace on demand: each token keeps its text and carries a `data-ws` copy with spaces,
// tabs and newlines made visible; the stylesheet swaps one for the other (`.show-whitespace`), so
// the output's text stays exactly the model's. A token's origin (origin.js) marks it: typed by the
// person, picked as a branch, kept from the run this continues, forced by the grammar, or a
// speculative run's draft the model accepted (`drafted`); `data-origin` carries it.

import { probColors } from "./colors.js";
import { isEndToken, isSpecial, visibleWhitespace } from "./format.js";
import { originOf } from "./origin.js";

// The class and tooltip each origin not drawn puts on its token (sampled and greedy ones have none).
const MARKS = {
  typed: ["typed", "typed by you: your edit, forced, not sampled"],
  branch: ["forced", "picked as a branch: the alternative you chose, forced, not sampled"],
  kept: ["kept", "kept from the run this continues (forced)"],
  forced_by_grammar: ["grammar-forced", "the grammar allowed only this token here"],
  draft: ["drafted", "drafted and accepted: the model checked it in the same pass as the tokens around it"],
  corrected: ["corrected", "drawn in place of a rejected draft, from what the draft left"],
};

export class TokenStream {
  /**
   * @param {HTMLElement} root  the output container
   * @param {object} on  callbacks: enter(index, el), leave(index, el), focus(index, el),
   *                     blur(index, el, next), activate(index, el), escape(index, el)
   */
  constructor(root, on) {
    this.root = root;
    this.on = on;
    this.elements = [];
    this.model = null; // the served model these tokens are from (its special ids, format.js); set by the page
    root.addEventListener("pointerover", (e) => this.#withToken(e, on.enter));
    root.addEventListener("pointerout", (e) => this.#withToken(e, on.leave));
    root.addEventListener("focusin", (e) => this.#withToken(e, (i, el) => {
      this.#makeTabStop(el);
      on.focus(i, el);
    }));
    root.addEventListener("focusout", (e) => this.#withToken(e, (i, el) => on.blur(i, el, e.relatedTarget)));
    root.addEventListener("click", (e) => this.#withToken(e, on.activate));
    root.addEventListener("keydown", (e) => this.#key(e));
  }

  clear() {
    this.elements = [];
    this.root.replaceChildren();
  }

  /** Shows a whole run's tokens (moving between branches). */
  render(tokens, tail = "") {
    this.clear();
    for (const token of tokens) if (token) this.append(token);
    this.appendTail(tail);
  }

  /** Adds the element for a `token` event and returns it. */
  append(token) {
    const el = document.createElement("span");
    el.className = "token";
    el.dataset.index = String(token.index);
    el.tabIndex = this.elements.length === 0 ? 0 : -1;
    if (typeof token.prob === "number") {
      const { tint, strong } = probColors(token.prob);
      el.style.setProperty("--tint", tint);
      el.style.setProperty("--tint-strong", strong);
      el.dataset.prob = String(token.prob);
    } else {
      el.classList.add("unscored"); // a prompt's first token: nothing predicts it (its title says so, below)
    }
    if (typeof token.entropy?.before === "number") el.dataset.entropy = String(token.entropy.before); // the entropy tint's
    const end = isEndToken(token);
    if (end) {
      // The end of the text: shown by name (a stylesheet label, so copied text stays the model's).
      el.classList.add("eos");
      el.dataset.name = token.token;
      el.title = `end of sequence: the model chose ${token.token}, its end token, and the text ends here`;
    } else if (token.text === "") {
      // Part of a character: its bytes show up with the token that completes it.
      el.classList.add("pending");
      el.title = "part of a character; the text appears with the next token";
    } else {
      el.textContent = token.text;
      el.dataset.ws = visibleWhitespace(token.text, true);
      if (token.text.includes("\n")) el.classList.add("newline");
    }
    const special = !end && token.text !== "" && isSpecial(token, this.model);
    if (special) {
      // One of the model's special (control) tokens inside the text: labelled by name, as the end token
      // is (the stylesheet's label; the element keeps the text, so copied text stays the model's).
      el.classList.add("special");
      el.dataset.name = token.token;
      el.title = `special token ${token.token}: the model's own markup, not ordinary text`;
    }
    const origin = originOf(token);
    el.dataset.origin = origin;
    const mark = MARKS[origin];
    if (mark) {
      el.classList.add(mark[0]);
      if (!end) el.title = mark[1];
    }
    if (el.classList.contains("unscored")) {
      el.title = `${el.title ? `${el.title}; ` : ""}the first token: nothing comes before it, so the model gave it no probability and no entropy (it stays untinted)`;
    }
    // A token is a button: activating it pins its alternatives open. Its name is its text; the
    // inspector describes it (aria-describedby) while open.
    el.setAttribute("role", "button");
    el.setAttribute("aria-expanded", "false");
    if (end) el.setAttribute("aria-label", `end of sequence (${token.token})`);
    else if (token.text === "") el.setAttribute("aria-label", "partial character");
    else if (special) el.setAttribute("aria-label", `special token (${token.token})`);
    this.elements[token.index] = el;
    this.root.append(el);
    return el;
  }

  /** Text released only when the run ended (held back for an unfinished character). */
  appendTail(text) {
    if (!text) return;
    const el = document.createElement("span");
    el.className = "tail";
    el.textContent = text;
    el.title = "released at the end of the run";
    this.root.append(el);
  }

  /** Marks the token whose step the panels below show. */
  markSelected(index) {
    for (const other of this.root.querySelectorAll(".token.selected")) other.classList.remove("selected");
    this.element(index)?.classList.add("selected");
  }

  element(index) {
    return this.elements[index] ?? null;
  }

  focus(index) {
    const el = this.element(index);
    el?.focus();
    return el;
  }

  #makeTabStop(el) {
    for (const other of this.root.querySelectorAll(".token[tabindex='0']")) {
      if (other !== el) other.tabIndex = -1;
    }
    el.tabIndex = 0;
  }

  #key(event) {
    const el = event.target.closest?.(".token");
    if (!el) return;
    const index = Number(el.dataset.index);
    const last = this.elements.length - 1;
    const moves = { ArrowRight: index + 1, ArrowDown: index + 1, ArrowLeft: index - 1, ArrowUp: index - 1, Home: 0, End: last };
    if (event.key in moves) {
      event.preventDefault();
      this.focus(Math.min(last, Math.max(0, moves[event.key])));
    } else if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      this.on.activate(index, el);
    } else if (event.key === "Escape") {
      this.on.escape(index, el);
    }
  }

  #withToken(event, callback) {
    const el = event.target.closest?.(".token");
    if (!el || !this.root.contains(el)) return;
    if ((event.type === "pointerover" || event.type === "pointerout")) {
      if (event.pointerType && event.pointerType !== "mouse") return; // touch uses tap
      if (el.contains(event.relatedTarget)) return;
    }
    callback(Number(el.dataset.index), el);
  }
}
