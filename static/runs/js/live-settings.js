// The live comparison's settings as data: read from and written to the page's address, turned
// into one `generate` body per column, and a server error's `param` mapped to the field it names.
// Pure functions: no DOM, no socket.
//
// Settings are the texts typed in the form: {prompt, mode, system, turns, assistant_prefix, seed,
// max_tokens, columns: [{model, temperature, top_p, top_k, min_p, other}]} (the shared and column
// fields are the server's, live-fields.js; `model` a served model's id, empty: the default). In
// the address each is one query key (`prompt`, `seed`, …, `columns=3`, `c1.model=gemma-3-270m`,
// `c1.temperature=0.2`, `c2.other={"typical_p":0.9}`), empty
// ones left out, so a copied address restores the form exactly (a 19-digit seed included).
// A chat conversation (a saved chat run's, from "Run these settings again, live") adds its earlier
// turns and the answer's start as the playground's address writes them (`turns`, JSON
// [[role, content], …], and `assistant_prefix`): every column then sends the same `messages`.

import { turnsText, turnsValue } from "../../shared/js/address.js";
import { chatConversation } from "../../shared/js/chat-turns.js";
import { describeGrammar } from "../../shared/js/grammar.js";
import { seedValue } from "../../shared/js/socket.js";
import { FieldError, numberOrText, paramsFromJsonBox } from "../../shared/js/typed-params.js";
import { FIELDS, SHARED } from "./live-fields.js";

export { FIELDS, SHARED };
export const MIN_COLUMNS = 2;
export const MAX_COLUMNS = 4;
const TOP_N = 5;

export function emptyColumn() {
  return { model: "", ...Object.fromEntries(FIELDS.map((key) => [key, ""])), other: "" };
}

/** Settings from a query string, or null when it holds none (the page keeps its defaults). */
export function settingsFromQuery(search) {
  const query = new URLSearchParams(search);
  const known = [...query.keys()].some((k) => ["prompt", "mode", ...SHARED, "columns"].includes(k) || /^c\d\./.test(k));
  if (!known) return null;
  let count = Number.parseInt(query.get("columns") ?? "", 10);
  if (!Number.isFinite(count)) {
    count = Math.max(0, ...[...query.keys()].map((k) => Number(/^c(\d)\./.exec(k)?.[1] ?? 0)));
  }
  count = Math.min(MAX_COLUMNS, Math.max(MIN_COLUMNS, count));
  const columns = [];
  for (let n = 1; n <= count; n++) {
    const column = emptyColumn();
    for (const key of Object.keys(column)) column[key] = query.get(`c${n}.${key}`) ?? "";
    columns.push(column);
  }
  const settings = {
    prompt: query.get("prompt") ?? "",
    mode: query.get("mode") === "chat" ? "chat" : "completion",
    system: query.get("system") ?? "",
    turns: turnsValue(query.get("turns") ?? ""),
    assistant_prefix: query.get("assistant_prefix") ?? "",
    columns,
  };
  for (const key of SHARED) settings[key] = query.get(key) ?? "";
  return settings;
}

/** The query string for settings: every non-empty text, the column count always. */
export function settingsToQuery(settings) {
  const query = new URLSearchParams();
  query.set("prompt", settings.prompt);
  query.set("mode", settings.mode);
  if (settings.mode === "chat" && settings.system) query.set("system", settings.system);
  if (settings.mode === "chat" && settings.turns?.length) query.set("turns", turnsText(settings.turns));
  if (settings.mode === "chat" && settings.assistant_prefix) query.set("assistant_prefix", settings.assistant_prefix);
  for (const key of SHARED) if (settings[key].trim()) query.set(key, settings[key].trim());
  query.set("columns", String(settings.columns.length));
  settings.columns.forEach((column, i) => {
    for (const [key, text] of Object.entries(column)) if (text.trim()) query.set(`c${i + 1}.${key}`, text.trim());
  });
  return query.toString();
}

/** A uniformly random seed as a decimal string: below 2^62 when it can be sent exactly
 *  (JSON.rawJSON), otherwise below 2^53, which a JS number holds exactly. */
export function drawSeed(exact = typeof JSON.rawJSON === "function") {
  const [high, low] = crypto.getRandomValues(new Uint32Array(2));
  if (!exact) return String(high * 2 ** 21 + (low >>> 11));
  return ((BigInt(high >>> 2) << 32n) | BigInt(low)).toString();
}

/** One column's params (without the shared ones). Throws FieldError for a bad JSON box. */
export function columnParams(column) {
  const params = {};
  for (const key of FIELDS) if (column[key].trim()) params[key] = numberOrText(column[key]);
  const elsewhere = Object.fromEntries([
    ...FIELDS.map((key) => [key, "has its own field above; set it there"]),
    ...SHARED.map((key) => [key, "is shared by every column; set it above"]),
  ]);
  return { ...params, ...paramsFromJsonBox(column.other, "params", '{"typical_p": 0.9}', elsewhere) };
}

/** One entry per column: {body} to send, or {error: FieldError}. The seed goes out exactly. */
export function generateBodies(settings) {
  return settings.columns.map((column) => {
    let params;
    try {
      params = columnParams(column);
    } catch (error) {
      if (error instanceof FieldError) return { error };
      throw error;
    }
    for (const key of SHARED) {
      if (key === "seed") params.seed = seedValue(settings.seed); // exactly, even 19 digits
      else if (settings[key].trim()) params[key] = numberOrText(settings[key]);
    }
    const conversation = chatMessages(settings);
    const body = conversation ? { mode: "chat", ...conversation, params, top_n: TOP_N }
      : { prompt: settings.prompt, mode: settings.mode, params, top_n: TOP_N };
    if (column.model.trim()) body.model = column.model.trim();
    if (!conversation && settings.mode === "chat" && settings.system) body.system = settings.system;
    return { body };
  });
}

/** {messages, continue_final_message} of a chat conversation with earlier turns or an answer's
 *  start, as the playground sends it (system, turns, the prompt as the last user turn, the start);
 *  null otherwise (the body keeps `prompt` and `system`). */
export function chatMessages(settings) {
  if (settings.mode !== "chat") return null;
  return chatConversation(settings.turns ?? [], settings.prompt, settings.system, settings.assistant_prefix ?? "");
}

/** The form field (its id) for an error's dotted `param` in column n (1-based); null when none
 *  fits, so the column's own error line shows it. */
export function fieldFor(param, n) {
  if (!param) return null;
  if (param === "model") return `c${n}-model`;
  if (["prompt", "mode", "system"].includes(param)) return `live-${param}`;
  if (param === "continue_final_message" || param.startsWith("messages")) return "live-prompt"; // the conversation's
  const [head, key] = param.split(".");
  if (head !== "params") return null;
  if (SHARED.includes(key)) return `live-${key}`;
  if (FIELDS.includes(key)) return `c${n}-${key}`;
  return `c${n}-other`; // "params" itself, or a key typed in the JSON box
}

/** A column's settings in a few words, for its heading. */
export function describeColumn(column) {
  const parts = FIELDS.filter((k) => column[k].trim()).map((k) => `${k} ${column[k].trim()}`);
  if (column.other.trim()) parts.push(describeOther(column.other.trim()));
  return parts.length ? parts.join(", ") : "the defaults";
}

/** The JSON box's text for a heading, a grammar in words ("grammar: JSON Schema: object with name,
 *  age") rather than its whole schema; text that is not such JSON as it is. */
function describeOther(text) {
  let other;
  try {
    other = JSON.parse(text);
  } catch {
    return text;
  }
  if (!other || typeof other !== "object" || !other.grammar) return text;
  const { grammar, ...rest } = other;
  const words = `grammar: ${describeGrammar(grammar)}`;
  return Object.keys(rest).length ? `${JSON.stringify(rest)}, ${words}` : words;
}
