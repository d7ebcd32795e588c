// How each of two models rated the other's choice where their texts differ: the other model's text
// so far (the prompt, the other's text before, the other's token there) is scored by this model with
// the `score` frame, and this model's probability of that continuation is read off the answer
// (cross-model-align.js's continuationRating). Completion mode only: a chat run's text follows a
// template each model writes its own way.

import { continuationRating, ratingText } from "./cross-model-align.js";

const TOP = 20; // the most `score` lists per position: a rank beyond it reads "not in its top 20"

/** The first non-empty piece of a span side's tokens: the token the model chose there. */
function chosenPiece(pieces, indices) {
  for (const i of indices) if (pieces[i]) return pieces[i];
  return "";
}

/** `rater` (model id) on `text` continuing `before`: {rating} or {error}. */
async function rate(client, rater, before, text) {
  try {
    const [context, scored] = await Promise.all([
      client.tokenize({ text: before, mode: "completion", model: rater }),
      client.request("score", { prompt: before + text, mode: "completion", model: rater, top_n: TOP }),
    ]);
    return { rating: continuationRating(context.tokens.map((t) => t.id), scored.tokens) };
  } catch (error) {
    return { error };
  }
}

/**
 * Both ratings at aligned span `index` ([A's rating of B's token there, B's of A's]): each model
 * scores the other's text so far (the prompt, the other's text before the span, the other's
 * token at its start). At the first difference the text before is the same for both; later, each
 * is read in the other's own context. `sides`: [{model, label, pieces}] for A and B; `prompt`:
 * the completion prompt both continued.
 */
export async function rateAcross(client, { prompt, sides, spans, index }) {
  const span = spans[index];
  const keys = ["a", "b"];
  return Promise.all([[0, 1], [1, 0]].map(async ([rater, author]) => {
    const { label: raterLabel, model } = sides[rater];
    const { label: authorLabel, pieces } = sides[author];
    const chosen = chosenPiece(pieces, span[keys[author]]);
    if (!chosen) return `${authorLabel} stopped here: nothing of its own for ${raterLabel} to rate.`;
    const before = prompt + pieces.join("").slice(0, span.start);
    const { rating, error } = await rate(client, model, before, chosen);
    return error ? `${raterLabel} could not rate ${authorLabel}'s ${JSON.stringify(chosen)}: ${error.message}`
      : ratingText(raterLabel, authorLabel, chosen, rating);
  }));
}
