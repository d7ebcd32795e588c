// What the page says to a newcomer around a run: whether a prompt reads like an instruction (which
// completion mode only continues, so chat mode is suggested), and, when a run ends, why it ended in
// plain words and what to try when the result is empty or odd (nothing written, a loop, cut off at
// max tokens, an instruction continued instead of answered). Pure: no DOM.

// Words an instruction or a request starts with. A completion prompt rarely does ("The capital of
// France is", "Once upon a time").
const IMPERATIVES = new Set([
  "answer", "calculate", "classify", "compare", "compose", "convert", "correct", "create", "define",
  "describe", "draft", "explain", "find", "fix", "generate", "give", "help", "imagine", "list", "make",
  "name", "outline", "paraphrase", "please", "plan", "recommend", "rewrite", "show", "solve", "suggest",
  "summarise", "summarize", "tell", "translate", "write",
]);
const REQUESTS = ["can you", "could you", "would you", "will you", "i want you", "i need you", "i would like you"];
const QUESTION_WORDS = new Set([
  "what", "why", "how", "who", "whom", "whose", "when", "where", "which",
  "is", "are", "was", "were", "do", "does", "did", "can", "could", "should", "would", "will",
]);

/** The prompt's words, lower-cased, without punctuation. */
function words(text) {
  return text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
}

/** Whether `text` reads like an instruction or a question addressed to the model (true for "Write a
 *  haiku about the sea." and "What is the capital of France?", false for "The capital of France is"). */
export function looksLikeInstruction(text) {
  const trimmed = text.trim();
  const list = words(trimmed);
  if (!list.length) return false;
  const start = list.slice(0, 4).join(" ");
  if (IMPERATIVES.has(list[0])) return true;
  if (REQUESTS.some((r) => start === r || start.startsWith(`${r} `))) return true;
  return trimmed.endsWith("?") && QUESTION_WORDS.has(list[0]);
}

/** The shortest run of words (1 to 12 long) that the text's end repeats at least three times in a
 *  row, as text, or null: a model stuck in a loop ("Your poem, Your poem, Your poem,"). */
export function repeatedEnding(text) {
  const list = text.trim().split(/\s+/).filter(Boolean);
  for (let period = 1; period <= 12; period += 1) {
    if (list.length < period * 3) break;
    const unit = list.slice(list.length - period);
    let copies = 1;
    while (copies * period + period <= list.length) {
      const from = list.length - (copies + 1) * period;
      if (list.slice(from, from + period).some((w, i) => w !== unit[i])) break;
      copies += 1;
    }
    if (copies >= 3 && (period > 1 || copies >= 4)) return unit.join(" ");
  }
  return null;
}

/** What to say when a run ended: `{why, tryNext}` in plain words (`tryNext` null when the result
 *  calls for nothing). `run` holds the `done` event's `reason`, `stopString` and `text`, the
 *  request's `mode`, `prompt` and `maxTokens`, and the tokens generated (`tokens`). */
export function endAdvice({ reason, stopString = null, text = "", tokens = 0, mode = "completion", prompt = "", maxTokens = null }) {
  const why = {
    eos: "The model chose its end-of-sequence token: it considered the text finished.",
    stop: `A stop string${stopString ? ` (“${stopString}”)` : ""} appeared, and the run ended there.`,
    max_tokens: `It reached Max tokens${maxTokens ? ` (${maxTokens})` : ""}, the most it was allowed to write.`,
    cancelled: "You stopped it; what was written so far is kept.",
  }[reason] ?? `It ended: ${reason}.`;
  const instruction = mode === "completion" && looksLikeInstruction(prompt ?? "");
  let tryNext = null;
  if (text.trim() === "") {
    tryNext = {
      eos: "Nothing was written: its very first pick was the end token. Try a prompt that invites a continuation, set Min tokens above 0, or tick Ignore end-of-sequence.",
      stop: "Nothing was written before the stop string: remove or change the stop strings.",
      max_tokens: tokens ? "Only spaces or line breaks were written so far: raise Max tokens, or turn on Show spaces and newlines to see them." : "Max tokens allowed no token at all: raise it.",
      cancelled: "Nothing was written before you stopped it: press Generate again.",
    }[reason] ?? null;
  } else if (repeatedEnding(text)) {
    tryNext = `The text loops (“${repeatedEnding(text)}” over and over), as small models often do. Try a higher temperature, a repetition penalty (under Penalties)${instruction ? ", or chat mode: this prompt is an instruction" : ""}.`;
  } else if (instruction) {
    tryNext = "Your prompt reads like an instruction, and completion mode only continues text as if it were the start of a document. Chat mode answers it.";
  } else if (reason === "max_tokens") {
    tryNext = "Raise Max tokens to read on, or press Step to add one token at a time.";
  }
  return { why, tryNext };
}
