// Number and text formatting shared by the views. Pure functions: no DOM.

/** A probability as a percentage with two decimals ("65.12%"); tiny non-zero values as "<0.01%". */
export function formatProb(p) {
  if (typeof p !== "number" || !Number.isFinite(p)) return "–";
  if (p === 0) return "0%";
  if (p < 0.00005) return "<0.01%";
  return `${(p * 100).toFixed(2)}%`;
}

/** Milliseconds, rounded for people: "41 ms", "1.25 s". */
export function formatMs(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms)) return "–";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** The time to first token as a run's numbers say it: from the run's turn to its first token, and,
 *  when the run first waited for its model to load (`timing.load_ms`), that wait beside it — the
 *  person waited for both. */
export function firstTokenWords(timing) {
  const first = formatMs(timing?.time_to_first_token_ms);
  const load = timing?.load_ms;
  return typeof load === "number" && Number.isFinite(load) ? `${first} (after ${formatMs(load)} loading the model)` : first;
}

/** A `loading` event in words: the run waits while its model loads. */
export function describeLoading(event) {
  return `Loading ${event.name ?? event.model}… (its first run since the server started; counted apart from the time to first token)`;
}

/** Tokens per second with one decimal. */
export function formatRate(perSecond) {
  if (typeof perSecond !== "number" || !Number.isFinite(perSecond)) return "–";
  return `${perSecond.toFixed(1)} tokens/s`;
}

/** A token's own text, quoted and escaped like a JSON string, so spaces and newlines show. */
export function quoteToken(text) {
  return JSON.stringify(String(text));
}

/** Prompt-token display text: newlines and tabs get visible marks, everything else is kept.
 *  With `spaces`, spaces become "·" and a newline keeps its line break after the mark. */
export function visibleWhitespace(text, spaces = false) {
  const marked = String(text).replaceAll("\r", "␍").replaceAll("\t", "⇥");
  if (!spaces) return marked.replaceAll("\n", "↵");
  return marked.replaceAll(" ", "·").replaceAll("\n", "↵\n");
}

/** A log-probability or other signed number with two decimals, with a real minus sign. */
export function formatSigned(x, digits = 2) {
  if (typeof x !== "number" || !Number.isFinite(x)) return "–";
  return x.toFixed(digits).replace("-", "−");
}

// Special tokens named by the server's list of models (`GET /api/models`'s `special_tokens`, such
// as Gemma's <bos> and <eos>), added by the page that read the list (model-picker.js).
const namedSpecials = new Set();

/** Marks these token texts as special (the served models' own, from the server). */
export function knowSpecialTokens(texts) {
  for (const text of texts) if (text) namedSpecials.add(text);
}

/** Special tokens of the tokenizer look like <|im_start|>, or are a served model's named ones. */
export function isSpecialToken(text) {
  return /^<\|[^|]*\|>$/.test(text) || namedSpecials.has(text);
}

// Each served model's special token ids (`GET /api/models`' `special_tokens.ids`: [first, last]
// ranges; Gemma's 6,252 in two), so every model's control tokens are told by id, as its tokenizer
// knows them, not by their look.
const specialIds = new Map();

/** Records a model's special token id ranges ([[first, last], …]). */
export function knowSpecialIds(modelId, ranges) {
  if (modelId && Array.isArray(ranges)) specialIds.set(modelId, ranges);
}

/** Whether a `token` event (its `id`, its `token` text) is one of its model's special tokens: by
 *  id when the model's ranges are known, else by the text's look (`isSpecialToken`). */
export function isSpecial(token, modelId = null) {
  const ranges = specialIds.get(modelId);
  if (ranges && typeof token.id === "number") return ranges.some(([first, last]) => token.id >= first && token.id <= last);
  return isSpecialToken(token.token ?? "");
}

/** Whether a `token` event is an end-of-sequence token: a special token that adds no text (the
 *  model's end token, streamed as the run's last token; with ignore_eos its markup is text). */
export function isEndToken(token) {
  return token.text === "" && isSpecialToken(token.token ?? "");
}

const REASONS = {
  eos: "end of sequence (the model's end token)",
  stop: "a stop string matched",
  max_tokens: "max tokens reached",
  cancelled: "stopped on request; the output so far is kept",
};

/** Why a run ended, in words; the wire value always appears first. */
export function describeReason(reason) {
  return REASONS[reason] ? `${reason} — ${REASONS[reason]}` : String(reason);
}

/** A `queued` event in words: the run's place in line (1 = next) and the estimate, if any. */
export function describeQueued(event) {
  const estimate = event.estimated_wait_s == null ? "" : `, about ${Math.ceil(event.estimated_wait_s)} s`;
  return `Waiting in line: ${event.position === 1 ? "next" : `position ${event.position}`}${estimate}…`;
}

const SCALES = [[1e12, "trillion"], [1e9, "billion"], [1e6, "million"], [1e3, "thousand"]];
const SUPERSCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹";

/** How many times one probability is another, readable at any size: "3.4×", "340×", "4,700×",
 *  "31 trillion×", beyond that a power of ten ("10²⁰×"); "∞" when the other is 0. */
export function timesText(ratio) {
  if (!Number.isFinite(ratio)) return "∞";
  if (ratio < 10) return `${ratio.toFixed(1)}×`;
  if (ratio < 10_000) return `${Math.round(ratio).toLocaleString("en")}×`;
  if (ratio >= 1e15) return `10${[...String(Math.round(Math.log10(ratio)))].map((d) => SUPERSCRIPT[d]).join("")}×`;
  const [scale, word] = SCALES.find(([size]) => ratio >= size);
  const n = ratio / scale;
  return `${n < 10 ? n.toFixed(1) : Math.round(n)} ${word}×`;
}
