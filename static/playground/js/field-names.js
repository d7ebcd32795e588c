// Field names a person reads: an error's `param` is the API's name for the field it is about
// ("params.temperature", "params.grammar.schema", "prefix_tokens.0"); a page shows it as the page
// labels that field ("Temperature", "JSON Schema", "The text before the branch, entry 1"), and
// the server's message with every mention of the param put the same way. The one place the pages
// (the playground, /batch, /compare/live) map `param` to words; the API's `param` values stay as
// they are. Parameter labels are param-labels.js's (what the form's own labels say). Pure: no DOM.

import { LABELS } from "./param-labels.js";

const PARAM_NAMES = {
  ...Object.fromEntries(LABELS.map((label) => [label.key, label.label])),
  speculative: "Speculative decoding", // its own group, not a labelled dial
};

// Request fields that are not parameters, as the page labels them (or says what they hold).
const REQUEST_NAMES = {
  prompt: "Prompt",
  mode: "Mode",
  system: "System message",
  model: "Model",
  messages: "Earlier turns",
  continue_final_message: "The answer starts with",
  prefix_tokens: "The text before the branch",
  typed_tokens: "The edited text",
  branched: "The alternative picked",
  watch: "Watched tokens",
  top_n: "Top-N shown",
  use_cache: "No KV cache",
  other: "Other parameters",
};

// The parts of a parameter with an editor of its own, by the editor's labels.
const PART_NAMES = {
  grammar: { type: "Constraint", schema: "JSON Schema", pattern: "Regular expression", options: "Choices" },
  speculative: { draft: "Draft", k: "Drafted tokens per step (k)", switch_off: "Keep drafting" },
};

/** A param's parts: "params.grammar.options[2]" → ["params", "grammar", "options", "2"]. */
function parts(param) {
  return String(param).split(/\.|\[(\d+)\]/).filter((part) => part !== undefined && part !== "");
}

/** The page's name for a field the API names `param`; null for no param. */
export function fieldName(param) {
  if (!param) return null;
  const [head, ...rest] = parts(param);
  let key = head;
  let name = REQUEST_NAMES[head];
  if (head === "params") {
    if (!rest.length) return "Settings";
    key = rest.shift();
    name = PARAM_NAMES[key];
  }
  if (!name) name = key.replaceAll("_", " ");
  const words = rest.map((part) => (/^\d+$/.test(part) ? `entry ${Number(part) + 1}` : PART_NAMES[key]?.[part] ?? part.replaceAll("_", " ")));
  // a named part (the grammar's schema) is its own label; an entry says whose it is
  if (words.length && PART_NAMES[key]?.[rest[0]]) return [words[0], ...words.slice(1)].join(", ");
  return [name, ...words].join(", ");
}

/** The param and each shorter leading part of it, longest first, as the server writes them. */
function prefixes(param) {
  const cuts = [...String(param).matchAll(/[.[]/g)].map((match) => match.index);
  return [String(param), ...cuts.reverse().map((cut) => String(param).slice(0, cut))];
}

/** The server's `message` with every mention of `param` (or of the longest leading part of it
 *  that it mentions: "params.logit_bias keys must …" for "params.logit_bias.x") in the page's
 *  words; a message that mentions none is returned as it is. */
export function inWords(message, param) {
  const text = String(message ?? "");
  if (!param) return text;
  const named = prefixes(param).find((prefix) => mention(prefix).test(text));
  return named === undefined ? text : text.replace(mention(named, "g"), fieldName(named));
}

/** An error for a place with no field of its own (a status line, a form's general slot): the
 *  message in words, led by the field's name when the message does not say it already. */
export function errorText(message, param) {
  const text = inWords(message, param);
  const name = fieldName(param);
  return !name || text !== String(message ?? "") ? text : `${name}: ${text}`;
}

/** The name as a whole word: not followed by more of a name ("params.stop" in "params.stop.0",
 *  "params.top_k" in "params.top_k_x"), a full stop ending the sentence allowed. */
function mention(name, flags = "") {
  return new RegExp(`${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w\\[]|\\.\\w)`, flags);
}
