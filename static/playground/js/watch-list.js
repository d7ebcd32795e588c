// The watched-tokens field: type a word (tokenized with a `tokenize` in "plain" mode, the text
// alone) or "#1234" for a token id; the run follows each watched token at every step (the
// request's `watch`, at most MAX_WATCH ids). A word of several tokens is watched by its first
// token, and the note under the field says so.

import { quoteToken } from "../../shared/js/format.js";
import { wireTokenListField } from "./token-list-field.js";

export const MAX_WATCH = 8; // as the server's playground.edge.frames.MAX_WATCH

export class WatchList extends EventTarget {
  /** @param root  the field's container (#watch-words, [data-watch-note], [data-watch-list]);
   *  @param tokenize  body → Promise<tokens event> */
  constructor(root, tokenize) {
    super();
    this.root = root;
    this.tokenize = tokenize;
    this.entries = new Map(); // id → token text (null: added by id)
    this.words = root.querySelector("#watch-words");
    this.note = root.querySelector("[data-watch-note]");
    this.list = root.querySelector("[data-watch-list]");
    wireTokenListField(this.words, root.querySelector("[data-action=add-watch]"), this.list, {
      add: () => this.add(),
      remove: (id) => this.#remove(id),
    });
  }

  /** The request's `watch`: token ids in the order they were added. */
  get ids() {
    return [...this.entries.keys()];
  }

  /** [[id, text or null], …]: what the address keeps (null: added by id). */
  get entriesList() {
    return [...this.entries];
  }

  /** Replaces the watched tokens (from the address); at most MAX_WATCH are kept. */
  setEntries(list) {
    this.entries = new Map(list.slice(0, MAX_WATCH));
    if (this.entries.size) this.root.open = true; // tokens watched are never hidden
    this.#render();
  }

  /** Adds the field's word (its first token) or #id. */
  async add() {
    const text = this.words.value;
    if (text === "") return;
    if (this.entries.size >= MAX_WATCH) {
      this.note.textContent = `At most ${MAX_WATCH} tokens can be watched; remove one first.`;
      return;
    }
    const byId = text.trim().match(/^#(\d+)$/);
    let token;
    if (byId) {
      token = { id: Number(byId[1]), text: null }; // named by the run's events once it runs
      this.note.textContent = `Watching token ${token.id}.`;
    } else {
      this.note.textContent = "Tokenizing…";
      let tokens;
      try {
        tokens = (await this.tokenize({ text, mode: "plain", system: null })).tokens;
      } catch (error) {
        this.note.textContent = `Could not tokenize: ${error.message}. Watch a token by id as #1234.`;
        return;
      }
      if (!tokens.length) return;
      token = tokens[0];
      this.note.textContent = tokens.length === 1
        ? `Watching ${quoteToken(token.text)} (id ${token.id}).`
        : `${quoteToken(text)} is ${tokens.length} tokens (${tokens.map((t) => quoteToken(t.text)).join(" + ")}): ` +
          `watching its first, ${quoteToken(token.text)} (id ${token.id}).`;
    }
    this.entries.set(token.id, token.text);
    this.words.value = "";
    this.#render();
  }

  /** Watches nothing (another model: its ids name other tokens). */
  clear() {
    this.entries.clear();
    this.note.textContent = "";
    this.#render();
  }

  /** Removes the listed token `id` (its button in the list). */
  #remove(id) {
    this.entries.delete(id);
    this.#render();
  }

  #render() {
    this.list.replaceChildren(...[...this.entries].map(([id, text]) => {
      const item = document.createElement("li");
      item.dataset.id = String(id);
      const name = document.createElement("code");
      name.className = "token-text";
      name.textContent = text === null ? `#${id}` : quoteToken(text);
      const tag = document.createElement("span");
      tag.className = "bias-id";
      tag.textContent = `id ${id}`;
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "link-button";
      remove.dataset.remove = String(id);
      remove.textContent = "Remove";
      remove.setAttribute("aria-label", `Stop watching ${text === null ? `token ${id}` : quoteToken(text)}`);
      item.append(name, tag, remove);
      return item;
    }));
    this.dispatchEvent(new Event("change"));
  }
}
