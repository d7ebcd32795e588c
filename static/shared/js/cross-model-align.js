// Two models' token streams side by side. Their tokenizers differ (" Paris" is one token for one
// model, " Par" "is" for another; an emoji may be one token or four byte pieces), so positions do
// not line up: the streams are aligned on text offsets instead. Pure functions: no DOM, no socket.
//
// A stream is the list of its tokens' `text` pieces (the `token` events' `text`: a piece never
// splits a character, a token that is only part of one has an empty piece and the token that
// completes it carries the whole character). Offsets count UTF-16 code units of the joined text.
//
//   A: " Par" "is" ","     ← 3 tokens          spans: [0,6) " Paris"  A 0–1, B 0
//   B: " Paris" ","        ← 2 tokens                 [6,7) ","       A 2,   B 1
//
// A span runs between two offsets where both streams have a token boundary; within the common
// text the two sides of a span hold the same text. Past the first difference the texts part and
// the spans pair what each model wrote at the same offsets (different contexts from there on).

/** Each token's [start, end) in its stream's joined text: [{index, start, end}]. */
export function tokenOffsets(pieces) {
  let offset = 0;
  return pieces.map((piece, index) => {
    const start = offset;
    offset += piece.length;
    return { index, start, end: offset };
  });
}

/** The first offset where the two texts differ; null when they are equal. A text that is the
 *  other's beginning differs where it ends. */
export function firstDifference(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? null : n;
}

/** The offsets at which a stream's tokens end: every non-empty piece's end. */
function boundaries(offsets) {
  return new Set(offsets.filter((o) => o.end > o.start).map((o) => o.end));
}

/**
 * The aligned spans of two streams (lists of text pieces):
 * [{start, end, a: [token indices], b: [token indices], textA, textB, same}] in text order.
 * Span edges are the offsets where both streams have a token boundary; past the end of the
 * shorter text each token of the longer one is a span of its own (the other side empty).
 * A token with an empty piece (part of a character; an end-of-sequence token) goes with the span
 * at its offset, at the very end with the last span.
 */
export function alignStreams(piecesA, piecesB) {
  const textA = piecesA.join("");
  const textB = piecesB.join("");
  const offA = tokenOffsets(piecesA);
  const offB = tokenOffsets(piecesB);
  const endsA = boundaries(offA);
  const endsB = boundaries(offB);
  const shorter = Math.min(textA.length, textB.length);
  const longerEnds = textA.length >= textB.length ? endsA : endsB;
  const ascending = (set) => [...set].sort((x, y) => x - y);
  const edges = [0, ...ascending(endsA).filter((end) => end <= shorter && endsB.has(end))];
  edges.push(...ascending(longerEnds).filter((end) => end >= shorter && end > edges.at(-1)));
  const spans = [];
  for (let i = 1; i < edges.length; i++) {
    const [start, end] = [edges[i - 1], edges[i]];
    const [textOfA, textOfB] = [textA.slice(start, end), textB.slice(start, end)];
    spans.push({ start, end, a: [], b: [], textA: textOfA, textB: textOfB, same: textOfA === textOfB });
  }
  if (!spans.length) spans.push({ start: 0, end: 0, a: [], b: [], textA: "", textB: "", same: true });
  for (const [offsets, key] of [[offA, "a"], [offB, "b"]]) {
    for (const o of offsets) {
      const home = spans.find((s) => s.start <= o.start && o.start < s.end) ?? spans.at(-1);
      home[key].push(o.index);
    }
  }
  return spans;
}

/** The span holding the first character where the texts differ (or where one ended and the other
 *  went on): its index in `spans`, or null when the texts are equal. */
export function divergentSpan(spans, offset) {
  if (offset === null) return null;
  const i = spans.findIndex((s) => s.start <= offset && offset < s.end);
  return i === -1 ? null : i;
}

/**
 * How a model rated another model's continuation, from its own `score` answer.
 * `contextIds`: the ids this model feeds for the shared text before the continuation (its
 * `tokenize` of prompt + common text); `scored`: the `prompt_scores` tokens of prompt + common text
 * + the continuation. The continuation is every scored token after the context; when the model's
 * tokenizer merged across the seam (the scored ids do not start with the context's ids), there is
 * no probability of the continuation alone: {seam: true}.
 * Returns {p, logprob, tokens: [texts], rank (of its first token among the answer's `top`, 1 = the
 * model's likeliest; null when below the listed ones), listed (how many `top` listed), seam}.
 */
export function continuationRating(contextIds, scored) {
  const seam = contextIds.length >= scored.length || contextIds.some((id, i) => scored[i].id !== id);
  if (seam) return { p: null, logprob: null, tokens: [], rank: null, listed: 0, seam: true };
  const rest = scored.slice(contextIds.length);
  const logprob = rest.reduce((sum, t) => sum + t.logprob, 0);
  const first = rest[0];
  const top = first.top ?? [];
  const place = top.findIndex((t) => t.id === first.id);
  return {
    p: Math.exp(logprob), logprob, tokens: rest.map((t) => t.token),
    rank: place === -1 ? null : place + 1, listed: top.length, seam: false,
  };
}

/** A rating in words: "Gemma gave SmolLM's \" Paris\" p = 0.31 (rank 2)." */
export function ratingText(rater, author, text, rating) {
  const quoted = JSON.stringify(text);
  if (rating.seam) {
    return `${rater} reads ${author}'s ${quoted} only joined to the text before it (one of its tokens spans both), so it gives it no probability of its own.`;
  }
  const p = rating.p >= 0.001 ? rating.p.toPrecision(2) : rating.p.toExponential(1);
  const rank = rating.rank !== null ? `rank ${rating.rank}` : `not in its top ${rating.listed}`;
  if (rating.tokens.length === 1) return `${rater} gave ${author}'s ${quoted} p = ${p} (${rank}).`;
  const pieces = rating.tokens.map((t) => JSON.stringify(t)).join(" ");
  return `${rater} gave ${author}'s ${quoted} p = ${p} as ${rating.tokens.length} of its tokens, ${pieces} (the first: ${rank}).`;
}
