// Every parameter the page can send: the server's facts (rendered into the page as JSON by
// Django's json_script, the same schema as /api/params.schema.json) joined with the page's
// labels (param-labels.js). The form, the address, the presets and the what-if sliders all read
// this one table. Reads the page once, at import; the pure parts live in param-facts.js.

import { defaults, enabledStages as stagesOn, keysOf, rangeText, stageOrder } from "./param-facts.js";
import { LABELS, WHAT_IF as WHAT_IF_RANGES } from "./param-labels.js";

export { BUILTIN_PRESETS, EXPLORER_TEMPERATURES, GROUPS, PRESET_KEYS, STAGE_LABELS, stageLabel, stageText } from "./param-labels.js";

/** The served schema (docs/params-schema.md). */
export const SCHEMA = JSON.parse(document.getElementById("param-facts").textContent);

/** The control a parameter gets, from its kind in the facts. */
function controlKind(prop) {
  const kind = prop["x-kind"];
  if (kind === "integer" && Array.isArray(prop.type) && prop.type.includes("null")) return "seed"; // exact digits
  return { boolean: "bool", choice: "choice", strings: "lines" }[kind] ?? kind;
}

/** One parameter: the page's words plus the server's facts. `off` is the server's default (not
 *  sent when equal); `value` the page's starting value when it differs. */
function spec(label) {
  const prop = SCHEMA.properties[label.key];
  const entry = {
    ...label,
    kind: controlKind(prop),
    off: prop.default,
    min: prop.minimum ?? prop.exclusiveMinimum,
    max: prop.maximum ?? prop.exclusiveMaximum,
    range: rangeText(prop),
    offText: prop["x-off"],
  };
  if (prop.enum) entry.choices = prop.enum.map((v) => [v, label.choiceNames?.find(([c]) => c === v)?.[1] ?? String(v)]);
  if ("initial" in label) entry.value = label.initial;
  return entry;
}

/** The form's parameters, in the page's order (the two with their own editors are not in it). */
export const PARAMS = LABELS.filter((label) => label.group).map(spec);

export const PARAM_BY_KEY = Object.fromEntries(PARAMS.map((p) => [p.key, p]));

/** The sampler chain's stages in the server's default order. */
export const DEFAULT_ORDER = stageOrder(SCHEMA);

/** The sampler chain's own keys (the rest are the loop's): what `inspect` takes as params. */
export const SAMPLING_KEYS = keysOf(SCHEMA, "sampling");

/** The server's default of every parameter. */
export const DEFAULTS = defaults(SCHEMA);

/** The what-if sliders: their own slider ranges, the parameter's label. */
export const WHAT_IF = WHAT_IF_RANGES.map((slider) => ({ ...slider, label: LABELS.find((l) => l.key === slider.key).label }));

/** The stages the server would run for these params in this order (a set, for the order list). */
export function enabledStages(params, order = DEFAULT_ORDER) {
  return new Set(stagesOn(SCHEMA, params, order));
}

/** The control id of a parameter: its key with dashes ("top_p" → "top-p"). */
export function controlId(key) {
  return key.replaceAll("_", "-");
}

/** The value a fresh form starts with. */
export function initialValue(spec) {
  return "value" in spec ? spec.value : spec.off;
}
