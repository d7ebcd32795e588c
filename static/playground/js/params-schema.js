// Every parameter the page can send, as data: its group, label, one-line explanation, range and
// "off" value (docs/sampling.md, docs/websocket-api.md). The form, the URL, the presets and the
// what-if sliders all read this one table. Pure data and small pure helpers: no DOM.

/** The sampler chain's stages in the server's default order (docs/sampling.md, "The order"). */
export const DEFAULT_ORDER = [
  "logit_bias", "repetition_penalty", "frequency_penalty", "presence_penalty", "dry",
  "no_repeat_ngram", "top_n_sigma", "temperature", "dynamic_temperature", "top_k", "top_p",
  "min_p", "typical_p", "epsilon_cutoff", "eta_cutoff", "xtc", "mirostat",
];

export const GROUPS = [
  { id: "randomness", title: "Randomness", open: true,
    about: "How much chance goes into each pick, and which random numbers it uses." },
  { id: "truncation", title: "Truncation", open: true,
    about: "Which tokens stay in the running before the pick." },
  { id: "penalties", title: "Penalties", open: false,
    about: "Push down tokens that already appeared, so the text does not loop." },
  { id: "length", title: "Length and stopping", open: true,
    about: "When the run ends." },
  { id: "search", title: "Several answers and search", open: false,
    about: "Sample several continuations at once, or search with beams instead of sampling." },
];

// kind: "number" | "integer" | "seed" | "bool" | "choice" | "lines"
// off: the value that turns the setting off (or its default when it only tunes another one);
// value: what the form starts with, when it differs from `off`.
// always: sent even when it equals `off` (the run's numbers then show what was asked).
export const PARAMS = [
  // Randomness
  { key: "temperature", group: "randomness", label: "Temperature", kind: "number", min: 0, max: 2, step: 0.05,
    off: 1, value: 0.7, always: true, range: "0–2", offText: "1 (0 is greedy)",
    about: "Divides the logits: below 1 sharpens the distribution, above 1 flattens it; 0 always takes the top token." },
  { key: "seed", group: "randomness", label: "Seed", kind: "seed", off: null, always: true,
    range: "0 – 2^63−1", offText: "empty: drawn at random",
    about: "Fixes the random draws; the same seed and settings give the same text." },
  { key: "dynatemp_range", group: "randomness", label: "Dynamic temperature range", kind: "number", min: 0, max: 2, step: 0.05,
    off: 0, range: "0–2", offText: "0",
    about: "Temperature varies within T ± range with the step's entropy: calm steps cooler, uncertain steps hotter." },
  { key: "dynatemp_exponent", group: "randomness", label: "Dynamic temperature exponent", kind: "number", min: 0, step: 0.1,
    off: 1, range: "≥ 0", offText: "1 (tunes the range)",
    about: "Shape of the entropy → temperature curve; only used when the range is above 0." },

  // Truncation
  { key: "top_k", group: "truncation", label: "Top-k", kind: "integer", min: 0, step: 1, off: 0, range: "integer ≥ 0", offText: "0",
    about: "Keep only the k most likely tokens." },
  { key: "top_p", group: "truncation", label: "Top-p", kind: "number", min: 0, max: 1, step: 0.01, off: 1, always: true,
    range: "above 0, at most 1", offText: "1",
    about: "Nucleus: keep the fewest top tokens whose probabilities add up to p." },
  { key: "min_p", group: "truncation", label: "Min-p", kind: "number", min: 0, max: 1, step: 0.01, off: 0, range: "0–1", offText: "0",
    about: "Keep tokens at least this fraction as likely as the top token." },
  { key: "typical_p", group: "truncation", label: "Typical-p", kind: "number", min: 0, max: 1, step: 0.01, off: 1,
    range: "above 0, at most 1", offText: "1",
    about: "Keep the tokens whose surprise is closest to the step's average surprise, up to mass p." },
  { key: "top_n_sigma", group: "truncation", label: "Top-nσ", kind: "number", min: 0, step: 0.1, off: 0, range: "≥ 0", offText: "0",
    about: "Keep tokens whose logit is within n standard deviations of the top logit." },
  { key: "epsilon_cutoff", group: "truncation", label: "Epsilon cutoff", kind: "number", min: 0, max: 1, step: 0.0001, off: 0,
    range: "0 to below 1", offText: "0",
    about: "Remove tokens with probability below ε." },
  { key: "eta_cutoff", group: "truncation", label: "Eta cutoff", kind: "number", min: 0, max: 1, step: 0.0001, off: 0,
    range: "0 to below 1", offText: "0",
    about: "Remove tokens below min(η, √η·e^−H): a cutoff that loosens when the step is uncertain." },
  { key: "xtc_probability", group: "truncation", label: "XTC probability", kind: "number", min: 0, max: 1, step: 0.05, off: 0,
    range: "0–1", offText: "0",
    about: "Exclude Top Choices: with this chance per token, drop every top token above the threshold but the least likely." },
  { key: "xtc_threshold", group: "truncation", label: "XTC threshold", kind: "number", min: 0, max: 1, step: 0.01, off: 0.1,
    range: "0–1", offText: "0.1 (tunes XTC)",
    about: "Tokens at or above this probability count as top choices (above 0.5 XTC can never act)." },
  { key: "mirostat", group: "truncation", label: "Mirostat", kind: "choice", choices: [[0, "off"], [2, "v2"]], off: 0,
    range: "0 or 2", offText: "0",
    about: "Adapts a surprise cutoff each step to hold the text's average surprise near τ." },
  { key: "mirostat_tau", group: "truncation", label: "Mirostat τ", kind: "number", min: 0, step: 0.1, off: 5, range: "above 0",
    offText: "5 (tunes mirostat)", about: "Target surprise in bits." },
  { key: "mirostat_eta", group: "truncation", label: "Mirostat η", kind: "number", min: 0, max: 1, step: 0.01, off: 0.1,
    range: "0–1", offText: "0.1 (tunes mirostat)", about: "How fast mirostat's cutoff follows the target." },

  // Penalties
  { key: "repetition_penalty", group: "penalties", label: "Repetition penalty", kind: "number", min: 0, step: 0.05, off: 1,
    range: "above 0", offText: "1",
    about: "Divides a seen token's positive logit (multiplies a negative one), however often it appeared." },
  { key: "frequency_penalty", group: "penalties", label: "Frequency penalty", kind: "number", min: -2, max: 2, step: 0.1, off: 0,
    range: "−2 – 2", offText: "0", about: "Subtracts value × how many times the token appeared." },
  { key: "presence_penalty", group: "penalties", label: "Presence penalty", kind: "number", min: -2, max: 2, step: 0.1, off: 0,
    range: "−2 – 2", offText: "0", about: "Subtracts value once from every token that appeared at all." },
  { key: "penalty_window", group: "penalties", label: "Penalty window", kind: "integer", min: 0, step: 1, off: 0,
    range: "integer ≥ 0", offText: "0 = the whole history", about: "The three penalties above only count the last N tokens." },
  { key: "penalize_prompt", group: "penalties", label: "Penalize the prompt's tokens too", kind: "bool", off: false,
    range: "on/off", offText: "off", about: "Penalties also see the prompt, not only the generated text." },
  { key: "dry_multiplier", group: "penalties", label: "DRY multiplier", kind: "number", min: 0, step: 0.1, off: 0,
    range: "≥ 0", offText: "0", about: "Don't Repeat Yourself: penalize the token that would extend a repeated sequence." },
  { key: "dry_base", group: "penalties", label: "DRY base", kind: "number", min: 1, step: 0.05, off: 1.75, range: "≥ 1",
    offText: "1.75 (tunes DRY)", about: "The penalty grows as base^(repeat length − allowed length)." },
  { key: "dry_allowed_length", group: "penalties", label: "DRY allowed length", kind: "integer", min: 1, step: 1, off: 2,
    range: "integer ≥ 1", offText: "2 (tunes DRY)", about: "Repeats shorter than this are free." },
  { key: "dry_penalty_last_n", group: "penalties", label: "DRY window", kind: "integer", min: -1, step: 1, off: -1,
    range: "integer ≥ −1", offText: "−1 = whole history (0 turns DRY off)", about: "How far back DRY looks for repeats." },
  { key: "dry_sequence_breakers", group: "penalties", label: "DRY sequence breakers", kind: "lines", off: ["\n", ":", "\"", "*"],
    max: 32, range: "up to 32, one per line (\\n for a newline)", offText: "\\n : \" *",
    about: "A repeat never reaches back past a token containing one of these." },
  { key: "no_repeat_ngram_size", group: "penalties", label: "No-repeat n-gram size", kind: "integer", min: 0, step: 1, off: 0,
    range: "integer ≥ 0", offText: "0", about: "Forbid any token that would complete an n-gram already in the text." },

  // Length and stopping
  { key: "max_tokens", group: "length", label: "Max tokens", kind: "integer", min: 1, step: 1, off: 256, value: 128, always: true,
    range: "1 – what the context window leaves", offText: "256", about: "Generated tokens at most (per sample)." },
  { key: "min_tokens", group: "length", label: "Min tokens", kind: "integer", min: 0, step: 1, off: 0, range: "0 – max tokens",
    offText: "0", about: "End-of-sequence and stop strings are suppressed until this many tokens exist." },
  { key: "stop", group: "length", label: "Stop strings", kind: "lines", off: [], max: 8,
    range: "up to 8, one per line (\\n for a newline)", offText: "none",
    about: "The run ends when the text contains one; the stop string itself is not kept." },
  { key: "ignore_eos", group: "length", label: "Ignore end-of-sequence", kind: "bool", off: false, range: "on/off", offText: "off",
    about: "Keep going past the model's end token (its markup then counts as text)." },

  // Search
  { key: "n", group: "search", label: "Samples (n)", kind: "integer", min: 1, max: 8, step: 1, off: 1, range: "1–8", offText: "1",
    about: "Independent samples of the prompt at once; sample i uses seed + i." },
  { key: "num_beams", group: "search", label: "Beams", kind: "integer", min: 1, max: 8, step: 1, off: 1, range: "1–8",
    offText: "1", about: "Beam search keeps the best partial texts by log-probability instead of sampling (with n = 1)." },
  { key: "length_penalty", group: "search", label: "Length penalty", kind: "number", min: -5, max: 5, step: 0.1, off: 1,
    range: "−5 – 5", offText: "1 (tunes beams)", about: "Finished beams rank by log-probability / length^value." },
];

/** The sampler chain's own keys (the rest are the loop's): what `inspect` takes as params. */
export const SAMPLING_KEYS = new Set([
  "temperature", "seed", "dynatemp_range", "dynatemp_exponent", "top_k", "top_p", "min_p", "typical_p",
  "top_n_sigma", "epsilon_cutoff", "eta_cutoff", "xtc_probability", "xtc_threshold", "mirostat", "mirostat_tau",
  "mirostat_eta", "repetition_penalty", "frequency_penalty", "presence_penalty", "penalty_window", "dry_multiplier",
  "dry_base", "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers", "no_repeat_ngram_size",
  "logit_bias", "sampler_order",
]);

export const PARAM_BY_KEY = Object.fromEntries(PARAMS.map((p) => [p.key, p]));

/** The control id of a parameter: its key with dashes ("top_p" → "top-p"). */
export function controlId(key) {
  return key.replaceAll("_", "-");
}

/** The value a fresh form starts with. */
export function initialValue(spec) {
  return "value" in spec ? spec.value : spec.off;
}

/** Which stage a parameter switches on, and whether the current value does (for the order list). */
export function enabledStages(params) {
  const on = new Set();
  const get = (key) => (key in params ? params[key] : PARAM_BY_KEY[key]?.off);
  if (Object.keys(params.logit_bias ?? {}).length) on.add("logit_bias");
  if (get("repetition_penalty") !== 1) on.add("repetition_penalty");
  if (get("frequency_penalty") !== 0) on.add("frequency_penalty");
  if (get("presence_penalty") !== 0) on.add("presence_penalty");
  if (get("dry_multiplier") > 0 && get("dry_penalty_last_n") !== 0) on.add("dry");
  if (get("no_repeat_ngram_size") > 0) on.add("no_repeat_ngram");
  if (get("top_n_sigma") > 0) on.add("top_n_sigma");
  if (get("dynatemp_range") > 0 && get("temperature") > 0) on.add("dynamic_temperature");
  else on.add("temperature");
  if (get("top_k") > 0) on.add("top_k");
  if (get("top_p") < 1) on.add("top_p");
  if (get("min_p") > 0) on.add("min_p");
  if (get("typical_p") < 1) on.add("typical_p");
  if (get("epsilon_cutoff") > 0) on.add("epsilon_cutoff");
  if (get("eta_cutoff") > 0) on.add("eta_cutoff");
  if (get("xtc_probability") > 0) on.add("xtc");
  if (get("mirostat") === 2) on.add("mirostat");
  return on;
}

// Presets change only the randomness and truncation dials (not the seed); everything else stays.
export const PRESET_KEYS = PARAMS.filter((p) => (p.group === "randomness" || p.group === "truncation") && p.key !== "seed")
  .map((p) => p.key);

export const BUILTIN_PRESETS = [
  { name: "Greedy", about: "T 0: always the most likely token", values: { temperature: 0 } },
  { name: "Precise", about: "T 0.2", values: { temperature: 0.2 } },
  { name: "Balanced", about: "T 0.7, top-p 0.9", values: { temperature: 0.7, top_p: 0.9 } },
  { name: "Creative", about: "T 1.0, top-p 0.95", values: { temperature: 1.0, top_p: 0.95 } },
  { name: "Wild", about: "T 1.5, min-p 0.05", values: { temperature: 1.5, min_p: 0.05 } },
];

/** The what-if sliders: temperature, truncation, penalties and the llama.cpp stages, with slider
 *  ranges (the number box beside each slider takes any value in the parameter's own range). */
export const WHAT_IF = [
  { key: "temperature", label: "Temperature", min: 0, max: 2, step: 0.05 },
  { key: "top_k", label: "Top-k", min: 0, max: 100, step: 1 },
  { key: "top_p", label: "Top-p", min: 0.01, max: 1, step: 0.01 },
  { key: "min_p", label: "Min-p", min: 0, max: 0.5, step: 0.01 },
  { key: "typical_p", label: "Typical-p", min: 0.01, max: 1, step: 0.01 },
  { key: "top_n_sigma", label: "Top-nσ", min: 0, max: 5, step: 0.1 },
  { key: "epsilon_cutoff", label: "Epsilon cutoff", min: 0, max: 0.2, step: 0.001 },
  { key: "eta_cutoff", label: "Eta cutoff", min: 0, max: 0.2, step: 0.001 },
  { key: "dynatemp_range", label: "Dynamic temperature range", min: 0, max: 2, step: 0.05 },
  { key: "xtc_probability", label: "XTC probability", min: 0, max: 1, step: 0.05 },
  { key: "xtc_threshold", label: "XTC threshold", min: 0, max: 0.5, step: 0.01 },
  { key: "repetition_penalty", label: "Repetition penalty", min: 0.5, max: 2, step: 0.05 },
  { key: "frequency_penalty", label: "Frequency penalty", min: -2, max: 2, step: 0.1 },
  { key: "presence_penalty", label: "Presence penalty", min: -2, max: 2, step: 0.1 },
  { key: "dry_multiplier", label: "DRY multiplier", min: 0, max: 2, step: 0.05 },
];

/** The temperature explorer's columns, as in the seed texts' "Effect of Temperature on Token Probabilities" table. */
export const EXPLORER_TEMPERATURES = [0.1, 0.5, 1, 1.5, 2];
