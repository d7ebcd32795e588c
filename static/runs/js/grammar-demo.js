// The live comparison's constrained-decoding demo: one chat prompt asking for a small JSON object
// about a person, one seed, two columns at the same temperature — the first free, the second held
// to a JSON Schema (name and age). With seed 3 the free column wraps its JSON in a Markdown fence,
// writes the age as a string and keeps talking; the constrained one writes an object the schema
// accepts and ends. Each column is then marked valid or not (grammar-view.js).

import { GRAMMAR_EXAMPLES } from "../../shared/js/grammar.js";
import { emptyColumn } from "./live-settings.js";

export const DEMO_SCHEMA = JSON.parse(GRAMMAR_EXAMPLES.json_schema);

/** The demo's settings, as the live form's `write` takes them. */
export function grammarDemoSettings() {
  const free = { ...emptyColumn(), temperature: "0.8" };
  const constrained = { ...free, other: JSON.stringify({ grammar: { type: "json_schema", schema: DEMO_SCHEMA } }) };
  return {
    prompt: "Give me a small JSON object about a person, with their name and age.",
    mode: "chat",
    system: "",
    turns: [],
    assistant_prefix: "",
    seed: "3",
    max_tokens: "48",
    columns: [free, constrained],
  };
}
