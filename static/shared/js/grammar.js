// A run's constraint (`params.grammar`, docs/sampling.md "Constrained decoding") as the page edits,
// shows and checks it. Pure: no DOM.
//
//   {"type": "json_schema", "schema": {…}}   the text is JSON that the schema accepts
//   {"type": "regex", "pattern": "…"}        the whole text matches the pattern
//   {"type": "choice", "options": ["…"]}     the text is one of the options
//
// The editor holds a type and one text: the schema as JSON, the pattern, or the options one per
// line (a newline inside an option written \n, as in the stop-strings box). The page checks only
// that a schema is JSON; the server is the judge of everything else and names the field it refuses.

import { decodeLine, encodeLine } from "./address.js";

/** The constraint types in the editor's order: their words and the field holding their source. */
export const GRAMMAR_TYPES = {
  json_schema: { label: "JSON Schema", field: "schema", source: "Schema (JSON)" },
  regex: { label: "Regular expression", field: "pattern", source: "Pattern" },
  choice: { label: "Choices", field: "options", source: "Options, one per line" },
};

/** A starting example per type: what the editor fills in when a type is chosen with an empty box.
 *  Each is closed, so the constraint itself ends the text well inside a small max tokens: the schema
 *  allows no other property (additionalProperties false), requires every one, and bounds each value
 *  (a name of at most 16 characters, an age 0–120, a job from a list): at most 59 characters, about
 *  20–30 tokens with the served models (tests/inference/decoding/test_grammar_examples_real.py). */
export const GRAMMAR_EXAMPLES = {
  json_schema: JSON.stringify({
    type: "object",
    properties: {
      name: { type: "string", minLength: 1, maxLength: 16 },
      age: { type: "integer", minimum: 0, maximum: 120 },
      job: { type: "string", enum: ["student", "teacher", "doctor", "engineer", "artist", "other"] },
    },
    required: ["name", "age", "job"],
    additionalProperties: false,
  }, null, 2),
  regex: "(yes|no), because [a-z ]{1,40}\\.",
  choice: "Paris\nLyon\nMarseille",
};

/** The grammar for the editor's `type` ("" = off) and `source` text: {grammar} (null when off) or
 *  {error: {param, message}} for a schema that is not JSON (named as the server would name it). */
export function grammarFromEditor(type, source) {
  if (!type) return { grammar: null };
  const spec = GRAMMAR_TYPES[type];
  if (!spec) return { error: { param: "params.grammar.type", message: `params.grammar.type: unknown type ${JSON.stringify(type)}` } };
  if (type === "json_schema") {
    let schema;
    try {
      schema = JSON.parse(source);
    } catch (error) {
      return { error: { param: "params.grammar.schema", message: `params.grammar.schema is not valid JSON: ${error.message}` } };
    }
    return { grammar: { type, schema } };
  }
  if (type === "regex") return { grammar: { type, pattern: source } };
  return { grammar: { type, options: source.split("\n").filter((line) => line !== "").map(decodeLine) } };
}

/** The editor's {type, source} for a grammar (null or a malformed one: off). */
export function editorFromGrammar(grammar) {
  const spec = grammar && GRAMMAR_TYPES[grammar.type];
  if (!spec || !(spec.field in grammar)) return { type: "", source: "" };
  const value = grammar[spec.field];
  if (grammar.type === "json_schema") return { type: grammar.type, source: JSON.stringify(value, null, 2) };
  if (grammar.type === "choice") return { type: grammar.type, source: (Array.isArray(value) ? value : []).map(encodeLine).join("\n") };
  return { type: grammar.type, source: String(value) };
}

/** The address's text for a grammar (JSON, as JSON.stringify writes it; "" when off), and back
 *  (malformed text: off). */
export function grammarText(grammar) {
  return grammar ? JSON.stringify(grammar) : "";
}

export function grammarValue(text) {
  if (!text) return null;
  try {
    const parsed = JSON.parse(text);
    return editorFromGrammar(parsed).type ? parsed : null;
  } catch {
    return null;
  }
}

/** A grammar in a few words ("JSON Schema: an object with name, age"; "off"). */
export function describeGrammar(grammar) {
  if (!grammar) return "off";
  const spec = GRAMMAR_TYPES[grammar.type];
  if (!spec) return "unknown";
  if (grammar.type === "json_schema") {
    const props = Object.keys(grammar.schema?.properties ?? {});
    return props.length ? `${spec.label}: ${grammar.schema.type ?? "a value"} with ${props.join(", ")}` : spec.label;
  }
  if (grammar.type === "regex") return `${spec.label}: /${grammar.pattern}/`;
  return Array.isArray(grammar.options) ? `${spec.label}: ${grammar.options.map((o) => JSON.stringify(o)).join(" | ")}` : spec.label;
}

const JSON_TYPES = {
  object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
  array: Array.isArray,
  string: (v) => typeof v === "string",
  integer: Number.isInteger,
  number: (v) => typeof v === "number",
  boolean: (v) => typeof v === "boolean",
  null: (v) => v === null,
};

/** Where `value` breaks the schema's `type`, `required` and `properties` (recursively; the
 *  keywords the page reads — the server's library enforces the whole schema): a message, or null. */
function schemaProblem(schema, value, path = "the value") {
  if (!schema || typeof schema !== "object") return null;
  const types = [schema.type ?? []].flat();
  if (types.length && !types.some((t) => JSON_TYPES[t]?.(value))) return `${path} is not ${types.join(" or ")}`;
  if (!JSON_TYPES.object(value)) return null;
  for (const key of schema.required ?? []) if (!(key in value)) return `${path} has no "${key}"`;
  for (const [key, sub] of Object.entries(schema.properties ?? {})) {
    const problem = key in value ? schemaProblem(sub, value[key], `"${key}"`) : null;
    if (problem) return problem;
  }
  return null;
}

/** Whether `text` satisfies `grammar`, checked on the page: {valid, why}. JSON Schema: the text
 *  parses as JSON and has the schema's types, required and listed properties; a regular
 *  expression: the whole text matches (`new RegExp`, Unicode); choices: the text is one of them. */
export function checkText(grammar, text) {
  if (grammar.type === "json_schema") {
    let value;
    try {
      value = JSON.parse(text);
    } catch (error) {
      return { valid: false, why: `not JSON: ${error.message}` };
    }
    const problem = schemaProblem(grammar.schema, value);
    return problem ? { valid: false, why: `JSON, but ${problem}` } : { valid: true, why: "valid JSON for the schema" };
  }
  if (grammar.type === "regex") {
    let pattern;
    try {
      pattern = new RegExp(`^(?:${grammar.pattern})$`, "u");
    } catch (error) {
      return { valid: false, why: `the page cannot read the pattern: ${error.message}` };
    }
    return pattern.test(text) ? { valid: true, why: "matches the pattern" } : { valid: false, why: "does not match the pattern" };
  }
  return grammar.options.includes(text) ? { valid: true, why: "one of the choices" } : { valid: false, why: "not one of the choices" };
}
