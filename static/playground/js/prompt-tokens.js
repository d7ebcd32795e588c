// The exact token sequence fed to the model (`started.prompt_tokens`), special tokens included.
// Each token is a chip; newlines and tabs get visible marks; text goes in with textContent only.

import { isSpecialToken, visibleWhitespace } from "./format.js";

export function renderPromptTokens(list, countEl, tokens, contextWindow) {
  list.replaceChildren();
  for (const token of tokens) {
    const chip = document.createElement("li");
    chip.className = isSpecialToken(token.text) ? "chip special" : "chip";
    chip.textContent = visibleWhitespace(token.text);
    chip.title = `id ${token.id}`;
    chip.dataset.id = String(token.id);
    list.append(chip);
  }
  const windowText = contextWindow ? ` of the ${contextWindow}-token context window` : "";
  countEl.textContent = `${tokens.length} token${tokens.length === 1 ? "" : "s"}${windowText}`;
}

export function clearPromptTokens(list, countEl) {
  list.replaceChildren();
  countEl.textContent = "Shown when a run starts.";
}
