// The server's parameter facts: the JSON Schema served at /api/params.schema.json (built from
// inference/ by playground/edge/param_facts.py) and rendered into the page. Pure functions over it —
// no DOM — so Node can run them in the tests. Ranges, defaults, the stage order and the rule for
// which stages are on are read here and nowhere else on the page.

/** Every parameter's default (what the server uses when the key is missing), by key. */
export function defaults(schema) {
  return Object.fromEntries(Object.entries(schema.properties).map(([key, prop]) => [key, prop.default]));
}

/** The keys of one part: "sampling" (the sampler chain's, which `inspect` takes) or "loop". */
export function keysOf(schema, part) {
  return new Set(Object.keys(schema.properties).filter((key) => schema.properties[key]["x-part"] === part));
}

/** The sampler stages in the server's default order. */
export function stageOrder(schema) {
  return [...schema["x-stage-order"]];
}

/** The stages a chain built from `params` runs, in `order` (SamplingParams.enabled_stages): a stage
 *  is on when all its clauses hold; greedy (T = 0) ends the chain after its last stage. Missing
 *  keys (and null) take their defaults. */
export function enabledStages(schema, params, order = schema["x-stage-order"]) {
  const value = (key) => params[key] ?? schema.properties[key].default;
  const holds = (clause) => {
    if ("stage" in clause) return stageOn(clause.stage) === clause.on;
    const v = value(clause.param);
    switch (clause.op) {
      case "nonempty": return Object.keys(v ?? {}).length > 0;
      case "==": return v === clause.value;
      case "!=": return v !== clause.value;
      case ">": return v > clause.value;
      case "<": return v < clause.value;
      default: throw new Error(`unknown operator ${clause.op} in the parameter facts`);
    }
  };
  const stageOn = (name) => schema["x-stages"][name].every(holds);
  const greedy = schema["x-greedy"];
  const isGreedy = holds(greedy.when);
  const on = [];
  for (const name of order) {
    if (!stageOn(name)) continue;
    on.push(name);
    if (isGreedy && name === greedy.last_stage) break;
  }
  return on;
}

const MINUS = "\u2212";

/** A bound as text: "−2", "0.5", and 2^63−1 (beyond a double's exact integers) as such. */
function bound(n) {
  if (Number.isInteger(n) && !Number.isSafeInteger(n)) return `2^${Math.round(Math.log2(n))}${MINUS}1`;
  return String(n).replace("-", MINUS);
}

/** The array form of a list-of-strings property (`stop` also takes one string). */
function listForm(prop) {
  return prop.type === "array" ? prop : (prop.anyOf ?? []).find((p) => p.type === "array");
}

/** A property's range in words, from its schema keywords ("0 – 2", "above 0, at most 1",
 *  "integer ≥ 0", "0 or 2", "up to 8, one per line …"). */
export function rangeText(prop) {
  const kind = prop["x-kind"];
  if (prop.enum) return prop.enum.map(bound).join(" or ");
  if (kind === "boolean") return "on/off";
  if (kind === "strings") return `up to ${listForm(prop).maxItems}, one per line (\\n for a newline)`;
  if (kind !== "number" && kind !== "integer") return "";
  const prefix = kind === "integer" ? "integer " : "";
  const low = prop.minimum ?? prop.exclusiveMinimum;
  const high = prop.maximum ?? prop.exclusiveMaximum;
  const lowOpen = "exclusiveMinimum" in prop;
  if (high === undefined) return `${prefix}${lowOpen ? "above" : "≥"} ${bound(low)}`;
  if (!lowOpen && "maximum" in prop) return `${prefix}${bound(low)} – ${bound(high)}`;
  const from = lowOpen ? `above ${bound(low)}` : `${bound(low)}`;
  const to = "maximum" in prop ? `at most ${bound(high)}` : `below ${bound(high)}`;
  return `${prefix}${from}${lowOpen ? ", " : " to "}${to}`;
}
