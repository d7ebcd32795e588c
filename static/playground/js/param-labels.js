// What the page says about each parameter: its group, label and one-line explanation, and the
// page's own choices (the value a fresh form starts with when it is not the server's default, the
// parameters sent even at their default, the names of a choice's values), and the stages' human
// names. Every fact about a parameter — its type, range, default, "off" value, the stage order and
// which stages are on — comes from the server (param-facts.js); a test fails when a key or a stage
// exists on one side only. Pure data: no DOM.

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

// initial: what a fresh form starts with, when it is not the server's default.
// always: sent even at its default (the run's numbers then show what was asked).
// choiceNames: the words for a choice's values (the values themselves are the server's).
export const LABELS = [
  // Randomness
  { key: "temperature", group: "randomness", label: "Temperature", initial: 0.7, always: true,
    about: "Divides the logits: below 1 sharpens the distribution, above 1 flattens it; 0 always takes the top token." },
  { key: "seed", group: "randomness", label: "Seed", always: true,
    about: "Fixes the random draws; the same seed and settings give the same text." },
  { key: "dynatemp_range", group: "randomness", label: "Dynamic temperature range",
    about: "Temperature varies within T ± range with the step's entropy: calm steps cooler, uncertain steps hotter." },
  { key: "dynatemp_exponent", group: "randomness", label: "Dynamic temperature exponent",
    about: "Shape of the entropy → temperature curve; only used when the range is above 0." },

  // Truncation
  { key: "top_k", group: "truncation", label: "Top-k",
    about: "Keep only the k most likely tokens." },
  { key: "top_p", group: "truncation", label: "Top-p", always: true,
    about: "Nucleus: keep the fewest top tokens whose probabilities add up to p." },
  { key: "min_p", group: "truncation", label: "Min-p",
    about: "Keep tokens at least this fraction as likely as the top token." },
  { key: "typical_p", group: "truncation", label: "Typical-p",
    about: "Keep the tokens whose surprise is closest to the step's average surprise, up to mass p." },
  { key: "top_n_sigma", group: "truncation", label: "Top-nσ",
    about: "Keep tokens whose logit is within n standard deviations of the top logit." },
  { key: "epsilon_cutoff", group: "truncation", label: "Epsilon cutoff",
    about: "Remove tokens with probability below ε." },
  { key: "eta_cutoff", group: "truncation", label: "Eta cutoff",
    about: "Remove tokens below min(η, √η·e^−H): a cutoff that loosens when the step is uncertain." },
  { key: "xtc_probability", group: "truncation", label: "XTC probability",
    about: "Exclude Top Choices: with this chance per token, drop every top token above the threshold but the least likely." },
  { key: "xtc_threshold", group: "truncation", label: "XTC threshold",
    about: "Tokens at or above this probability count as top choices (above 0.5 XTC can never act)." },
  { key: "mirostat", group: "truncation", label: "Mirostat", choiceNames: [[0, "off"], [2, "v2"]],
    about: "Adapts a surprise cutoff each step to hold the text's average surprise near τ." },
  { key: "mirostat_tau", group: "truncation", label: "Mirostat τ",
    about: "Target surprise in bits." },
  { key: "mirostat_eta", group: "truncation", label: "Mirostat η",
    about: "How fast mirostat's cutoff follows the target." },

  // Penalties
  { key: "repetition_penalty", group: "penalties", label: "Repetition penalty",
    about: "Divides a seen token's positive logit (multiplies a negative one), however often it appeared." },
  { key: "frequency_penalty", group: "penalties", label: "Frequency penalty",
    about: "Subtracts value × how many times the token appeared." },
  { key: "presence_penalty", group: "penalties", label: "Presence penalty",
    about: "Subtracts value once from every token that appeared at all." },
  { key: "penalty_window", group: "penalties", label: "Penalty window",
    about: "The three penalties above only count the last N tokens." },
  { key: "penalize_prompt", group: "penalties", label: "Penalize the prompt's tokens too",
    about: "Penalties also see the prompt, not only the generated text." },
  { key: "dry_multiplier", group: "penalties", label: "DRY multiplier",
    about: "Don't Repeat Yourself: penalize the token that would extend a repeated sequence." },
  { key: "dry_base", group: "penalties", label: "DRY base",
    about: "The penalty grows as base^(repeat length − allowed length)." },
  { key: "dry_allowed_length", group: "penalties", label: "DRY allowed length",
    about: "Repeats shorter than this are free." },
  { key: "dry_penalty_last_n", group: "penalties", label: "DRY window",
    about: "How far back DRY looks for repeats." },
  { key: "dry_sequence_breakers", group: "penalties", label: "DRY sequence breakers",
    about: "A repeat never reaches back past a token containing one of these." },
  { key: "no_repeat_ngram_size", group: "penalties", label: "No-repeat n-gram size",
    about: "Forbid any token that would complete an n-gram already in the text." },

  // Length and stopping
  { key: "max_tokens", group: "length", label: "Max tokens", initial: 128, always: true,
    about: "Generated tokens at most (per sample)." },
  { key: "min_tokens", group: "length", label: "Min tokens",
    about: "End-of-sequence and stop strings are suppressed until this many tokens exist." },
  { key: "stop", group: "length", label: "Stop strings",
    about: "The run ends when the text contains one; the stop string itself is not kept." },
  { key: "ignore_eos", group: "length", label: "Ignore end-of-sequence",
    about: "Keep going past the model's end token (its markup then counts as text)." },

  // Search
  { key: "n", group: "search", label: "Samples (n)",
    about: "Independent samples of the prompt at once; sample i uses seed + i." },
  { key: "num_beams", group: "search", label: "Beams",
    about: "Beam search keeps the best partial texts by log-probability instead of sampling (with n = 1)." },
  { key: "length_penalty", group: "search", label: "Length penalty",
    about: "Finished beams rank by log-probability / length^value." },

  // Their own editors (not in the groups above)
  { key: "grammar", group: null, label: "Grammar",
    about: "Only tokens that keep the text a match for a JSON Schema, a regular expression or a list of choices; the end only where it is complete." },
  { key: "logit_bias", group: null, label: "Logit bias",
    about: "Add a number to chosen tokens' logits before every other stage but a grammar." },
  { key: "sampler_order", group: null, label: "Stage order",
    about: "The order the sampler chain's stages run in." },
];

// The sampler chain's stages in words, by identifier: the page shows each as "human name ·
// identifier" (stageText). The identifiers, their order and when each is on are the server's
// (declared beside each stage's class in inference/sampling/stages/); a test fails when a stage
// has no label here or a label names no stage.
export const STAGE_LABELS = {
  grammar: "Grammar (constrained decoding)",
  logit_bias: "Logit bias",
  repetition_penalty: "Repetition penalty",
  frequency_penalty: "Frequency penalty",
  presence_penalty: "Presence penalty",
  dry: "Don't repeat yourself (DRY)",
  no_repeat_ngram: "No-repeat n-gram",
  top_n_sigma: "Top-nσ",
  temperature: "Temperature",
  dynamic_temperature: "Dynamic temperature",
  top_k: "Top-k",
  top_p: "Nucleus (top-p)",
  min_p: "Min-p",
  typical_p: "Locally typical (typical-p)",
  epsilon_cutoff: "Epsilon cutoff",
  eta_cutoff: "Eta cutoff",
  xtc: "Exclude top choices (XTC)",
  mirostat: "Mirostat v2",
};

/** A stage's human name (its identifier when it has none). */
export function stageLabel(stage) {
  return Object.hasOwn(STAGE_LABELS, stage) ? STAGE_LABELS[stage] : stage;
}

/** A stage as the page shows it in text: "Nucleus (top-p) · top_p". */
export function stageText(stage) {
  const label = stageLabel(stage);
  return label === stage ? stage : `${label} · ${stage}`;
}

/** Presets change only the randomness and truncation dials (not the seed); everything else stays. */
export const PRESET_KEYS = LABELS.filter((p) => (p.group === "randomness" || p.group === "truncation") && p.key !== "seed")
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
  { key: "temperature", min: 0, max: 2, step: 0.05 },
  { key: "top_k", min: 0, max: 100, step: 1 },
  { key: "top_p", min: 0.01, max: 1, step: 0.01 },
  { key: "min_p", min: 0, max: 0.5, step: 0.01 },
  { key: "typical_p", min: 0.01, max: 1, step: 0.01 },
  { key: "top_n_sigma", min: 0, max: 5, step: 0.1 },
  { key: "epsilon_cutoff", min: 0, max: 0.2, step: 0.001 },
  { key: "eta_cutoff", min: 0, max: 0.2, step: 0.001 },
  { key: "dynatemp_range", min: 0, max: 2, step: 0.05 },
  { key: "xtc_probability", min: 0, max: 1, step: 0.05 },
  { key: "xtc_threshold", min: 0, max: 0.5, step: 0.01 },
  { key: "repetition_penalty", min: 0.5, max: 2, step: 0.05 },
  { key: "frequency_penalty", min: -2, max: 2, step: 0.1 },
  { key: "presence_penalty", min: -2, max: 2, step: 0.1 },
  { key: "dry_multiplier", min: 0, max: 2, step: 0.05 },
];

/** The temperature explorer's columns, as in the seed texts' tables. */
export const EXPLORER_TEMPERATURES = [0.1, 0.5, 1, 1.5, 2];
