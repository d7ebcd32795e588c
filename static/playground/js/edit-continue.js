// Edit and continue: the selected step's text, from that token to the end, in an editable field.
// Continue keeps the run's tokens before the position as they were (forced, the same ids), turns
// the edited text into tokens by itself (`tokenize` in "plain" mode: the text alone, nothing
// added, page by page) and forces them next, marked as typed by the person; the model then goes
// on from there with this run's settings, or the form's when chosen. The kept tokens are never
// re-tokenized, so the boundary at the position stays where the run had it: text typed right
// after a kept token is read as its own tokens, not merged into that token (docs/page.md).

import { el } from "../../shared/js/dom.js";

/** Every token id of `text` encoded alone, through `tokenize` (body → Promise<tokens event>). */
export async function typedTokens(tokenize, text) {
  const ids = [];
  let offset = 0;
  for (;;) {
    const page = await tokenize({ text, mode: "plain", system: null, offset });
    ids.push(...page.tokens.map((t) => t.id));
    if (page.next_offset === null || page.next_offset === undefined) return ids;
    offset = page.next_offset;
  }
}

/** The text of `run`'s sample 0 from token `index` on (what the edit field starts with). */
export function textFrom(run, index) {
  const tail = run.done && !run.isBeam ? run.done.tail ?? "" : "";
  return run.tokens.slice(index).map((t) => t.text).join("") + tail;
}

export class EditContinue {
  /** @param tokenize  body → Promise<tokens event>
   *  @param onContinue  (run, index, typedIds, useForm) → void: start the edited branch */
  constructor(root, tokenize, onContinue) {
    this.root = root;
    this.tokenize = tokenize;
    this.onContinue = onContinue;
    this.run = null;
    this.index = null;
    this.#build();
  }

  #build() {
    const label = el("label", { for: "edit-text" }, "Text from this token on (edit it freely)");
    this.field = el("textarea", { id: "edit-text", rows: "3", "aria-describedby": "edit-hint" });
    const hint = el("p", { className: "hint", id: "edit-hint" },
      "The tokens before it stay as they were; your text is forced next (typed by you), then the model continues. Ctrl+Enter continues.");
    this.useForm = el("input", { type: "checkbox", id: "edit-use-form" });
    const useForm = el("label", { for: "edit-use-form", className: "check" });
    useForm.append(this.useForm, " Continue with the form's settings (otherwise this run's)");
    this.button = el("button", { type: "button", "data-action": "continue-edit" }, "Continue from the edit");
    this.status = el("p", { className: "edit-status", role: "status", "aria-live": "polite" });
    this.button.addEventListener("click", () => this.#continue());
    this.field.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        this.#continue();
      }
    });
    this.root.replaceChildren(label, this.field, hint, useForm, this.button, this.status);
    this.root.hidden = true;
  }

  /** Offers `run`'s text from token `index` on for editing (a finished run's only). */
  show(run, index) {
    this.run = run;
    this.index = index;
    this.field.value = textFrom(run, index);
    this.status.textContent = "";
    this.root.hidden = false;
  }

  clear() {
    this.run = null;
    this.index = null;
    this.root.hidden = true;
  }

  async #continue() {
    const { run, index } = this;
    if (!run) return;
    this.button.disabled = true;
    this.status.textContent = "Tokenizing your text…";
    try {
      const ids = await typedTokens(this.tokenize, this.field.value);
      if (this.run !== run || this.index !== index) return; // another step was selected meanwhile
      this.status.textContent = `${ids.length} typed token${ids.length === 1 ? "" : "s"}, forced after token ${index}.`;
      this.onContinue(run, index, ids, this.useForm.checked);
    } catch (error) {
      this.status.textContent = `Could not tokenize the text: ${error.message}`;
    } finally {
      this.button.disabled = false;
    }
  }
}
