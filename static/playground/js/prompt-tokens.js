// The exact token sequence fed to the model, special tokens included, with the count against the
// context window. Live while typing (`LivePromptTokens`: a debounced `tokenize` in the form's mode)
// and authoritative once a run starts (`started.prompt_tokens`). Each token is a chip; newlines
// and tabs get visible marks; text goes in with textContent only.

import { isSpecial, visibleWhitespace } from "../../shared/js/format.js";

/** `model`: the id of the model whose tokens these are; its special tokens are told by id (format.js). */
export function renderPromptTokens(list, countEl, tokens, contextWindow, note = "", model = null) {
  list.replaceChildren();
  for (const token of tokens) {
    const chip = document.createElement("li");
    chip.className = isSpecial({ id: token.id, token: token.text }, model) ? "chip special" : "chip";
    chip.textContent = visibleWhitespace(token.text);
    chip.title = `id ${token.id}`;
    chip.dataset.id = String(token.id);
    list.append(chip);
  }
  const windowText = contextWindow ? ` of the ${contextWindow}-token context window` : "";
  countEl.textContent = `${tokens.length} token${tokens.length === 1 ? "" : "s"}${windowText}${note}`;
  countEl.dataset.count = String(tokens.length);
  list.dataset.count = String(tokens.length);
}

export function clearPromptTokens(list, countEl) {
  list.replaceChildren();
  countEl.textContent = "Shown when a run starts.";
  delete countEl.dataset.count;
}

/** Re-tokenizes the prompt as the user types (debounced); only the latest answer is shown. */
export class LivePromptTokens {
  /** @param read  () → {text, mode, system, conversation}; @param tokenize  body → Promise<tokens event> */
  constructor(list, countEl, read, tokenize, delay = 250) {
    this.list = list;
    this.countEl = countEl;
    this.read = read;
    this.tokenize = tokenize;
    this.delay = delay;
    this.timer = 0;
    this.sequence = 0;
    this.available = true;
  }

  /** Call on every edit of the prompt, mode or system message. */
  schedule() {
    if (!this.available) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), this.delay);
  }

  async refresh() {
    const { text, mode, system, conversation } = this.read();
    const ticket = ++this.sequence;
    if (text === "" && mode === "completion") {
      clearPromptTokens(this.list, this.countEl);
      return;
    }
    try {
      let body = { text, mode };
      // As `generate` gets it (controls.js): chat mode only (the server refuses it elsewhere), and
      // a blank one means the default system message; several turns go as `messages`.
      if (mode === "chat" && system && system.trim() !== "") body.system = system;
      if (mode === "chat" && conversation) body = { mode, ...conversation };
      const answer = await this.tokenize(body);
      if (ticket !== this.sequence) return;
      renderPromptTokens(this.list, this.countEl, answer.tokens, answer.context_window, " (live, as you type)", answer.model ?? null);
    } catch (error) {
      if (ticket !== this.sequence) return;
      if (error.code === "unknown_type") this.available = false; // a server without `tokenize`
      this.countEl.textContent = error.code === "unknown_type" ? "Shown when a run starts." : `Could not tokenize: ${error.message}`;
    }
  }

  /** A run started: show its exact tokens and drop any answer still on its way. */
  showStarted(tokens, contextWindow, model = null) {
    this.sequence++;
    clearTimeout(this.timer);
    renderPromptTokens(this.list, this.countEl, tokens, contextWindow, "", model);
  }
}
