// The grammar editor in the playground's settings (templates/playground/_grammar_field.html): off,
// JSON Schema, regular expression or choices, and one box for the schema, the pattern or the
// options (one per line). It gives the request's `params.grammar`; the page checks only that a
// schema is JSON, the server judges the rest and its error shows under the box (controls.js maps
// `params.grammar…` there). Its state is one text for the address and the presets: the grammar as
// JSON (grammar.js). A `change` event follows every edit.

import { GRAMMAR_EXAMPLES, GRAMMAR_TYPES, editorFromGrammar, grammarFromEditor, grammarText, grammarValue } from "../../shared/js/grammar.js";

const HINTS = {
  json_schema: "A JSON Schema (objects, arrays, strings, numbers, enum, required…); the model writes JSON it accepts, " +
    "one space after : and , and no other whitespace.",
  regex: "The whole text must match, e.g. (yes|no)\\..* — no look-around.",
  choice: "The text is exactly one of these. A newline inside an option is written \\n.",
};

export class GrammarEditor extends EventTarget {
  /** @param root  the editor's <details> (the type radios, #grammar-source and its label and hint) */
  constructor(root) {
    super();
    this.root = root;
    this.radios = [...root.querySelectorAll("input[name=grammar_type]")];
    this.sourceField = root.querySelector("[data-grammar-source]");
    this.source = root.querySelector("#grammar-source");
    this.label = root.querySelector("[data-grammar-source-label]");
    this.hint = root.querySelector("[data-grammar-hint]");
    this.sources = {}; // what was typed for each type, so switching back and forth loses nothing
    let shown = this.type;
    root.addEventListener("change", (e) => {
      if (!e.target.matches("input[name=grammar_type]")) return;
      this.sources[shown] = this.source.value;
      shown = this.type;
      this.source.value = this.sources[shown] ?? GRAMMAR_EXAMPLES[shown] ?? "";
      this.#sync();
      this.#changed();
    });
    this.source.addEventListener("input", () => this.#changed());
    this.#sync();
  }

  /** The chosen type ("" = off). */
  get type() {
    return this.radios.find((r) => r.checked)?.value ?? "";
  }

  /** {grammar} (null when off) or {error: {param, message}} for a schema that is not JSON. */
  read() {
    return grammarFromEditor(this.type, this.source.value);
  }

  /** The grammar as the address and the presets keep it (JSON; "" when off or not yet JSON). */
  get text() {
    return grammarText(this.read().grammar ?? null);
  }

  /** Sets the editor from the address's or a preset's text ("" or malformed: off). */
  setText(text) {
    this.set(grammarValue(text));
  }

  /** Sets the editor from a grammar object (null: off). */
  set(grammar) {
    const { type, source } = editorFromGrammar(grammar);
    for (const radio of this.radios) radio.checked = radio.value === type;
    this.source.value = source;
    this.sources = {};
    if (type) this.root.open = true; // a constraint in force is never hidden
    this.#sync();
    this.#changed();
  }

  #sync() {
    const type = this.type;
    this.sourceField.hidden = !type;
    if (!type) return;
    this.label.textContent = GRAMMAR_TYPES[type].source;
    this.hint.textContent = HINTS[type];
    this.source.rows = type === "regex" ? 2 : 6;
  }

  #changed() {
    this.dispatchEvent(new Event("change"));
  }
}
