// The live comparison's presets as data: each fills the form with settings that show what its
// name says, greedy (temperature 0) with a fixed seed, so it shows the same thing every time and
// the difference between its columns comes from what it varies, never from a lucky draw.
// tests/playground/runs/test_live_presets_js.py checks each one's settings against its claim;
// tests/e2e/test_model_picker.py and test_grammar.py run them and check what they show.

import { GRAMMAR_EXAMPLES } from "../../shared/js/grammar.js";
import { emptyColumn } from "./live-settings.js";

export const PRESET_SEED = "1"; // greedy runs draw nothing; the seed is fixed so the address says it
const GREEDY = { temperature: "0" };

/** Base vs instruct: a question, in completion mode (a base model has no chat template), to the
 *  first instruct model and the first base model the server lists. The instruct model answers it
 *  ("… William Shakespeare."); the base model goes on with the text, here more questions. Null
 *  when the server does not serve both kinds. */
export function baseVsInstructSettings(models) {
  const instruct = models.find((m) => m.kind === "instruct");
  const base = models.find((m) => m.kind === "base");
  if (!instruct || !base) return null;
  return {
    prompt: "Who wrote Romeo and Juliet?",
    mode: "completion",
    system: "",
    turns: [],
    assistant_prefix: "",
    seed: PRESET_SEED,
    max_tokens: "16",
    columns: [instruct, base].map((m) => ({ ...emptyColumn(), ...GREEDY, model: m.id })),
  };
}

/** JSON with and without a grammar: one chat prompt asking for a small JSON object about a
 *  person, twice, the second column held to the editor's JSON Schema example. The free column
 *  wraps its JSON in a Markdown fence and keeps talking; the constrained one writes an object the
 *  schema accepts and ends. Each column is then marked valid or not (grammar-view.js). */
export const DEMO_SCHEMA = JSON.parse(GRAMMAR_EXAMPLES.json_schema);

export function grammarDemoSettings() {
  const free = { ...emptyColumn(), ...GREEDY };
  const constrained = { ...free, other: JSON.stringify({ grammar: { type: "json_schema", schema: DEMO_SCHEMA } }) };
  return {
    prompt: "Give me a small JSON object about a person, with their name and age.",
    mode: "chat",
    system: "",
    turns: [],
    assistant_prefix: "",
    seed: PRESET_SEED,
    max_tokens: "48",
    columns: [free, constrained],
  };
}
