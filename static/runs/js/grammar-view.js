// A run's constraint shown read-only (/r/<id>), and whether a text satisfies it — the mark the live
// comparison puts on each column. The check is the page's own (grammar.js, checkText): JSON parsed,
// a regular expression matched in full, a choice compared.

import { el } from "../../shared/js/dom.js";
import { GRAMMAR_TYPES, checkText, editorFromGrammar } from "../../shared/js/grammar.js";

/** A mark saying whether `text` satisfies `grammar`: "✓ valid …" or "✗ …, why"; a run cut off at
 *  max tokens is said to be incomplete, which is why it may not validate. `against` names whose
 *  constraint it is when the run had none of its own. */
export function validityMark(grammar, text, reason, against = "") {
  const { valid, why } = checkText(grammar, text);
  const cut = reason === "max_tokens" && !valid ? " (cut off at max tokens: incomplete)" : "";
  const whose = against ? ` (checked against ${against})` : "";
  return el("span", { className: "validity", "data-valid": String(valid) }, `${valid ? "✓" : "✗"} ${why}${cut}${whose}`);
}

/** For each column's own grammar (null: none), the one its output is checked against and whose it
 *  is: its own, or for a column without one the first column's that has one — so the free side of a
 *  pair is held to the same constraint; null for every column when none has one. */
export function grammarsToCheck(grammars) {
  const first = grammars.findIndex(Boolean);
  return grammars.map((grammar) => {
    if (grammar) return { grammar, from: null };
    return first < 0 ? null : { grammar: grammars[first], from: first };
  });
}

/** Fills `section` (hidden until a run has a constraint) with the constraint's type, its source
 *  as the editor shows it, and whether the run's text satisfies it. */
export function showGrammar(section, grammar, text, reason) {
  if (!grammar) return;
  const { source } = editorFromGrammar(grammar);
  const type = GRAMMAR_TYPES[grammar.type]?.label ?? grammar.type;
  section.querySelector("[data-grammar-type]").textContent = type;
  section.querySelector("[data-grammar-source]").textContent = source;
  section.querySelector("[data-grammar-validity]").replaceChildren("The output: ", validityMark(grammar, text, reason));
  section.hidden = false;
}
