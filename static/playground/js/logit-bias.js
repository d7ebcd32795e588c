// The logit-bias editor: type words, see the tokens they become (a `tokenize` in "plain" mode:
// the text alone, nothing added), and give each token a bias that is added to its logit before
// any other stage (−100 all but bans it, +100 all but forces it). The entries become
// `params.logit_bias` ({id: bias}). "#1234" adds a token by id.

import { quoteToken } from "../../shared/js/format.js";
import { wireTokenListField } from "./token-list-field.js";

export class LogitBiasEditor extends EventTarget {
  /** @param root  the editor's container (holds #logit-bias, #logit-bias-value, the list);
   *  @param tokenize  body → Promise<tokens event> */
  constructor(root, tokenize) {
    super();
    this.root = root;
    this.tokenize = tokenize;
    this.entries = new Map(); // id → {id, text, bias}
    this.words = root.querySelector("#logit-bias");
    this.bias = root.querySelector("#logit-bias-value");
    this.list = root.querySelector("[data-bias-list]");
    this.preview = root.querySelector("[data-bias-preview]");
    this.list.addEventListener("change", (e) => {
      const input = e.target.closest("input[data-bias-for]");
      if (!input) return;
      const entry = this.entries.get(Number(input.dataset.biasFor));
      if (entry) entry.bias = input.value === "" ? 0 : Number(input.value);
      this.#changed();
    });
    wireTokenListField(this.words, root.querySelector("[data-action=add-bias]"), this.list, {
      add: () => this.addWords(),
      remove: (id) => this.#remove(id),
    });
    this.#render();
  }

  /** `params.logit_bias`: {id: bias} (ids as strings, as JSON keys are). */
  get value() {
    const out = {};
    for (const { id, bias } of this.entries.values()) out[String(id)] = bias;
    return out;
  }

  /** [[id, bias, text], …]: what the URL and presets keep. */
  get entriesList() {
    return [...this.entries.values()].map((e) => [e.id, e.bias, e.text]);
  }

  setEntries(list) {
    this.entries.clear();
    for (const [id, bias, text] of list ?? []) {
      if (Number.isInteger(id) && typeof bias === "number") this.entries.set(id, { id, bias, text: text ?? `#${id}` });
    }
    this.#render();
    this.#changed();
  }

  /** Tokenizes the words box and adds each token with the bias box's value. */
  async addWords() {
    const text = this.words.value;
    const bias = this.bias.value === "" ? 0 : Number(this.bias.value);
    if (text === "") return;
    let tokens;
    const byId = text.trim().match(/^#(\d+)$/);
    if (byId) {
      tokens = [{ id: Number(byId[1]), text: `#${byId[1]}` }];
    } else {
      this.preview.textContent = "Tokenizing…";
      try {
        tokens = (await this.tokenize({ text, mode: "plain", system: null })).tokens;
      } catch (error) {
        this.preview.textContent = `Could not tokenize: ${error.message}. Add a token by id as #1234.`;
        return;
      }
    }
    for (const token of tokens) this.entries.set(token.id, { id: token.id, text: token.text, bias });
    const shown = tokens.map((t) => `${quoteToken(t.text)} (${t.id})`).join(", ");
    this.preview.textContent = `${quoteToken(text)} → ${tokens.length} token${tokens.length === 1 ? "" : "s"}: ${shown}, bias ${bias}.`;
    this.words.value = "";
    this.#render();
    this.#changed();
  }

  /** Removes the listed token `id` (its button in the list). */
  #remove(id) {
    this.entries.delete(id);
    this.#render();
    this.#changed();
  }

  #render() {
    this.list.replaceChildren();
    for (const entry of this.entries.values()) {
      const item = document.createElement("li");
      item.dataset.id = String(entry.id);
      const name = document.createElement("code");
      name.className = "token-text";
      name.textContent = quoteToken(entry.text);
      const id = document.createElement("span");
      id.className = "bias-id";
      id.textContent = `id ${entry.id}`;
      const input = document.createElement("input");
      input.type = "number";
      input.step = "any";
      input.min = this.bias.min; // the server's range, rendered into the bias box
      input.max = this.bias.max;
      input.value = String(entry.bias);
      input.dataset.biasFor = String(entry.id);
      input.setAttribute("aria-label", `Bias for ${quoteToken(entry.text)} (id ${entry.id})`);
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "link-button";
      remove.dataset.remove = String(entry.id);
      remove.textContent = "Remove";
      remove.setAttribute("aria-label", `Remove the bias for ${quoteToken(entry.text)}`);
      item.append(name, id, input, remove);
      this.list.append(item);
    }
    this.root.dataset.count = String(this.entries.size);
  }

  #changed() {
    this.dispatchEvent(new Event("change"));
  }
}
