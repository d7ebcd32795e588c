// What the page says about each parameter: its group, label and one-line explanation, and the
// page's own choices (the value a fresh form starts with when it is not the server's default, the
// parameters sent even at their default, the names of a choice's values), and the stages' human
// names. A sampler stage's words come from its declaration (stage-words.js, generated). Every fact about a parameter — its type, range, default, "off" value, the stage order and
// which stages are on — comes from the server (param-facts.js); a test fails when a key or a stage
// exists on one side only. Pure data: no DOM.

import { FIELD_WORDS, STAGE_TITLES } from "./stage-words.js";

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

// The page's order of the parameters, and its own choices for some:
// initial: what a fresh form starts with, when it is not the server's default.
// always: sent even at its default (the run's numbers then show what was asked).
// choiceNames: the words for a choice's values (the values themselves are the server's).
// A sampler stage's field takes its group, label and explanation from its declaration
// (stage-words.js); a stage field not listed here goes at the end of its group. The parameters
// that are not a stage's (the seed, the generation loop's, the stage order) say theirs here.
const LAYOUT = [
  // Randomness
  { key: "temperature", initial: 0.7, always: true },
  { key: "seed", group: "randomness", label: "Seed", always: true,
    about: "Fixes the random draws; the same seed and settings give the same text." },
  { key: "dynatemp_range" },
  { key: "dynatemp_exponent" },

  // Truncation
  { key: "top_k" },
  { key: "top_p", always: true },
  { key: "min_p" },
  { key: "typical_p" },
  { key: "top_n_sigma" },
  { key: "epsilon_cutoff" },
  { key: "eta_cutoff" },
  { key: "xtc_probability" },
  { key: "xtc_threshold" },
  { key: "mirostat", choiceNames: [[0, "off"], [2, "v2"]] },
  { key: "mirostat_tau" },
  { key: "mirostat_eta" },

  // Penalties
  { key: "repetition_penalty" },
  { key: "frequency_penalty" },
  { key: "presence_penalty" },
  { key: "penalty_window" },
  { key: "penalize_prompt", group: "penalties", label: "Penalize the prompt's tokens too",
    about: "Penalties also see the prompt, not only the generated text." },
  { key: "dry_multiplier" },
  { key: "dry_base" },
  { key: "dry_allowed_length" },
  { key: "dry_penalty_last_n" },
  { key: "dry_sequence_breakers" },
  { key: "no_repeat_ngram_size" },

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
  { key: "grammar" },
  { key: "logit_bias" },
  { key: "sampler_order", group: null, label: "Stage order",
    about: "The order the sampler chain's stages run in." },
];

/** Every parameter the page shows, in its order: { key, group, label, about } and the page's
 *  choices (initial, always, choiceNames). */
export const LABELS = withStageFields(LAYOUT, FIELD_WORDS);

/** The layout with each stage field's words (`words`: FIELD_WORDS's shape) put in; a stage field the layout
 *  does not list goes after the last parameter of its group. */
export function withStageFields(layout, words) {
  const listed = layout.map((entry) => (Object.hasOwn(words, entry.key) ? { ...words[entry.key], ...entry } : entry));
  const unlisted = Object.keys(words).filter((key) => !layout.some((entry) => entry.key === key))
    .map((key) => ({ key, ...words[key] }));
  const out = [...listed];
  for (const entry of unlisted) {
    const last = out.findLastIndex((e) => e.group === entry.group);
    out.splice(last < 0 ? out.length : last + 1, 0, entry);
  }
  return out;
}

// The sampler chain's stages in words, by identifier: the page shows each as "human name ·
// identifier" (stageText). Each is its declaration's title (stage-words.js, written from the
// declarations beside each stage's class in inference/sampling/stages/).
export const STAGE_LABELS = STAGE_TITLES;

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
