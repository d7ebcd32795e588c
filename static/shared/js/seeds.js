// Seeds are integers from 0 to 2^63 − 1: more than a JS number holds exactly (2^53), so on the
// page a seed is a decimal string. JSON the page reads (websocket events, HTTP answers, data
// embedded in a page) is parsed with `parseJson`, which keeps every `seed` number's own digits
// (the reviver's source text); a seed is sent back with `seedValue`, a raw JSON number with
// those digits (`JSON.rawJSON`). No float ever sits in between, and the wire keeps seeds JSON
// integers. Pure functions: no DOM.

/** Whether this engine hands a reviver the number's source text (Chromium, Firefox, Node 21+). */
export const HAS_SOURCE_TEXT = (() => {
  let seen = false;
  JSON.parse("1", (key, value, context) => {
    seen = typeof context?.source === "string";
    return value;
  });
  return seen;
})();

function reviveSeed(key, value, context) {
  if (key === "seed" && typeof value === "number") {
    return HAS_SOURCE_TEXT ? context.source : String(value);
  }
  return value;
}

/** `JSON.parse`, with every number under a `seed` key, at any depth, as its decimal string. */
export function parseJson(text) {
  return JSON.parse(text, reviveSeed);
}

/** A value for `params.seed`. Digits are a whole number, sent exactly in canonical form ("007" →
 *  7); any other JSON number literal ("-1", "1.5", "1e3") is sent as written, and anything else as
 *  a string, so the server — the one judge of valid values — names the problem next to the seed
 *  field. Never throws. */
export function seedValue(text) {
  const trimmed = String(text).trim();
  if (/^\d+$/.test(trimmed)) return exactNumber(BigInt(trimmed).toString(), trimmed); // no leading zeros in JSON
  if (/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(trimmed)) return exactNumber(trimmed, trimmed); // JSON's number grammar
  return trimmed;
}

/** `literal` as a raw JSON number (exact digits); a plain number without JSON.rawJSON; `fallback`
 *  (sent as a string) should the browser refuse the literal. */
function exactNumber(literal, fallback) {
  if (typeof JSON.rawJSON !== "function") return Number(literal);
  try {
    return JSON.rawJSON(literal);
  } catch {
    return fallback;
  }
}
