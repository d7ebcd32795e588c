// The playground's address format: its settings in the query string, one key per setting under its
// wire name, each value as its control shows it. The same format is written by the server
// (playground/runs/address.py, for "Open in the playground"), and tests run both on one table of cases.
// Driven by the server's parameter facts (the schema): which keys exist, in what order, and how
// a value of each kind is written. Pure functions: no DOM, no history.
//
//   prompt, mode, system, top_n, no_cache=1    the request's own settings
//   speculative={"draft":"prompt_lookup","k":4} JSON, as the wire writes it (with "switch_off":false
//     when the run keeps drafting whatever it costs); absent: off
//   model=gemma-3-270m                         the served model's id (absent: the default)
//   turns=[["user","Hi"],["assistant","Hello"]] chat mode's earlier turns, JSON
//   assistant_prefix=The+answer+is             the answer's start for the model to continue
//   temperature=0.7, top_p=0.9, seed=…         numbers as typed
//   ignore_eos=1                               a box that is ticked
//   stop=END%0A%5Cn                            one entry per line, \n \t \\ written as escapes
//   sampler_order=top_k,temperature,…          stage names, comma-separated
//   logit_bias=[[id,bias,"text"],…]            JSON
//   grammar={"type":"regex","pattern":"…"}     JSON, as JSON.stringify writes it
//   watch=[[id,"text"],[id,null],…]            the watched tokens (null: added by #id), JSON

/** The request's own settings, before the parameters; `speculative` is a key of `params` that the
 *  parameter facts do not list (neither the sampler chain's nor the loop's). */
export const REQUEST_KEYS = ["prompt", "mode", "system", "turns", "assistant_prefix", "top_n", "no_cache", "watch", "model", "speculative"];

/** The roles a chat turn may have (the server's inference.chat_template.ROLES). */
export const TURN_ROLES = ["system", "user", "assistant"];

/** Chat turns ([{role, content}]) as the address holds them: JSON [[role, content], …]; none: "". */
export function turnsText(turns) {
  return turns.length ? JSON.stringify(turns.map(({ role, content }) => [role, content])) : "";
}

/** An address text holding a JSON array, parsed; "" or malformed text: []. */
function jsonArray(text) {
  try {
    const parsed = JSON.parse(text || "[]");
    return Array.isArray(parsed) ? parsed : [];
  } catch {
    return [];
  }
}

/** The address's `turns` text back to [{role, content}]; malformed entries are left out,
 *  malformed text gives none. */
export function turnsValue(text) {
  return jsonArray(text)
    .filter((e) => Array.isArray(e) && e.length === 2 && TURN_ROLES.includes(e[0]) && typeof e[1] === "string")
    .map(([role, content]) => ({ role, content }));
}

/** Watched tokens ([[id, text or null], …]) as the address holds them: JSON; none: "". */
export function watchText(entries) {
  return entries.length ? JSON.stringify(entries) : "";
}

/** The address's `watch` text back to [[id, text or null], …]; malformed entries are left out,
 *  malformed text gives none. */
export function watchValue(text) {
  return jsonArray(text).filter((e) => Array.isArray(e) && e.length === 2 && Number.isInteger(e[0]) && e[0] >= 0
    && (typeof e[1] === "string" || e[1] === null));
}

/** A `speculative` value ({draft, k, switch_off}) as the address holds it: JSON with draft and k,
 *  and `"switch_off": false` only when the run keeps drafting whatever it costs; off: "". */
export function speculativeText(value) {
  if (!value) return "";
  return JSON.stringify({ draft: value.draft, k: value.k, ...(value.switch_off === false ? { switch_off: false } : {}) });
}

/** The address's `speculative` text back to {draft, k} (with `switch_off: false` when it says so),
 *  or null (off) for "" or malformed text. */
export function speculativeValue(text) {
  try {
    const parsed = JSON.parse(text || "null");
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return null;
    return { draft: parsed.draft, k: parsed.k, ...(parsed.switch_off === false ? { switch_off: false } : {}) };
  } catch {
    return null;
  }
}

/** Every key the address may hold, in the order it is written. */
export function addressKeys(schema) {
  return [...REQUEST_KEYS, ...Object.keys(schema.properties)];
}

/** "\n" written as backslash-n in a line-per-entry box ↔ the real character. */
export function decodeLine(line) {
  return line.replace(/\\(n|t|\\)/g, (_, c) => ({ n: "\n", t: "\t", "\\": "\\" })[c]);
}

export function encodeLine(text) {
  return text.replaceAll("\\", "\\\\").replaceAll("\n", "\\n").replaceAll("\t", "\\t");
}

/** A parameter's value as its control's text (and the address's value). */
export function paramText(schema, key, value) {
  const kind = schema.properties[key]?.["x-kind"];
  if (value === null || value === undefined) return "";
  switch (kind) {
    case "boolean": return value ? "1" : "";
    case "strings": return (typeof value === "string" ? [value] : value).map(encodeLine).join("\n");
    case "stage_order": return value.join(",");
    case "grammar": return JSON.stringify(value);
    case "token_bias": {
      // a {token id: bias} object by id; the editor's [[id, bias, text], …] entries as they are
      const entries = Array.isArray(value) ? value
        : Object.entries(value).map(([id, bias]) => [Number(id), bias]).sort((a, b) => a[0] - b[0]);
      return entries.length ? JSON.stringify(entries) : "";
    }
    default: return String(value);
  }
}

/** A list parameter's text back to its value: stop strings and breakers (lines), the stage order
 *  (names), the logit bias (its [[id, bias, text?], …] entries; malformed text gives none). */
export function listValue(schema, key, text) {
  switch (schema.properties[key]?.["x-kind"]) {
    case "strings": return text.split("\n").filter((line) => line !== "").map(decodeLine);
    case "stage_order": return text.split(",").filter(Boolean);
    case "token_bias": {
      try {
        const parsed = JSON.parse(text || "[]");
        return Array.isArray(parsed) ? parsed.filter((e) => Array.isArray(e) && e.length >= 2) : [];
      } catch {
        return [];
      }
    }
    default: throw new Error(`${key} is not a list parameter`);
  }
}

/** The query string for `texts` ({key: text}): known keys only, in the address order. */
export function encodeAddress(schema, texts) {
  const query = new URLSearchParams();
  for (const key of addressKeys(schema)) if (key in texts) query.set(key, texts[key]);
  return query.toString();
}

/** {key: text} from a query string; keys the address does not know are ignored. */
export function decodeAddress(schema, search) {
  const known = new Set(addressKeys(schema));
  const texts = {};
  for (const [key, text] of new URLSearchParams(search)) if (known.has(key)) texts[key] = text;
  return texts;
}

/** The page's address for its settings: the control texts (`values`) that differ from a fresh
 *  page's (`initial`), the stage order when it is not the default, the logit-bias entries, chat
 *  mode's earlier turns and the answer's start (`prefix`) when there are any. */
export function settingsToAddress(schema, values, initial, { order = null, bias = [], turns = [], prefix = "" } = {}) {
  const texts = {};
  for (const [key, text] of Object.entries(values)) if (text !== initial[key]) texts[key] = text;
  if (order) texts.sampler_order = paramText(schema, "sampler_order", order);
  if (bias.length) texts.logit_bias = paramText(schema, "logit_bias", bias);
  if (turns.length) texts.turns = turnsText(turns);
  if (prefix !== "") texts.assistant_prefix = prefix;
  return encodeAddress(schema, texts);
}

/** {values, order, bias, turns, prefix} from the page's address: control texts by key, the stage
 *  order (null: the default), the logit-bias entries, chat turns ([{role, content}]) and the
 *  answer's start (""). An address without turns (any older one) gives none. */
export function settingsFromAddress(schema, search) {
  const {
    sampler_order: orderText, logit_bias: biasText, turns: turnsTextValue, assistant_prefix: prefix, ...values
  } = decodeAddress(schema, search);
  return {
    values,
    order: orderText ? listValue(schema, "sampler_order", orderText) : null,
    bias: biasText ? listValue(schema, "logit_bias", biasText) : [],
    turns: turnsValue(turnsTextValue ?? ""),
    prefix: prefix ?? "",
  };
}
