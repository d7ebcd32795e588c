// The note beside max tokens while a grammar is on (docs/page.md "Constrained decoding"): a
// constraint shapes every token but cannot finish a text that max tokens cuts off, so a learner
// who expects "valid JSON, guaranteed" knows why a cut run is not. Shown only while a constraint is
// in force; text via textContent only.

import { el } from "../../shared/js/dom.js";
import { controlId } from "./params-schema.js";

export const BUDGET_NOTE =
  "With a grammar on, max tokens still ends the text where it falls: the constraint cannot finish what " +
  "max tokens cuts off, and a cut text is incomplete (JSON left open). Leave it room.";

export class GrammarBudgetNote {
  /** @param form  the settings form (the max_tokens field is inside); @param editor  the GrammarEditor */
  constructor(form, editor) {
    this.editor = editor;
    this.control = form.querySelector(`#${controlId("max_tokens")}`);
    this.note = el("p", { id: `${controlId("max_tokens")}-grammar-note`, className: "hint grammar-budget-note", hidden: true },
      BUDGET_NOTE);
    const field = this.control?.closest(".field");
    field?.querySelector(".field-error")?.before(this.note);
    editor.addEventListener("change", () => this.sync());
    this.sync();
  }

  /** Shown (and read with max tokens) while a constraint is on. */
  sync() {
    const on = Boolean(this.editor.type);
    this.note.hidden = !on;
    if (!this.control) return;
    const ids = (this.control.getAttribute("aria-describedby") ?? "").split(" ").filter((id) => id && id !== this.note.id);
    if (on) ids.push(this.note.id);
    this.control.setAttribute("aria-describedby", ids.join(" "));
  }
}
