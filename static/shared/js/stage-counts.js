// What each stage of the sampler chain kept at one step, in words, from a `token` event's `stages`
// ([{name, kept}], in the chain's order) and `alternatives`. A stage is told against what came
// into it: the stage before it kept that many; the first stage gets the whole vocabulary. A
// grammar can keep 3 tokens of 49,152, so counts are written with thousands separators. Pure: no DOM.

/** A count as people read it: 49,152. */
export function formatCount(n) {
  return typeof n === "number" ? n.toLocaleString("en-US") : "–";
}

/** One entry per stage: {name, kept, from (null: the whole vocabulary), text}. */
export function stageCounts(stages) {
  let from = null;
  return (stages ?? []).map(({ name, kept }) => {
    const whole = from === null ? "of the whole vocabulary" : kept === from ? `all ${formatCount(from)}` : `of ${formatCount(from)}`;
    const text = kept === from ? `kept ${whole}` : `kept ${formatCount(kept)} ${whole}`;
    const entry = { name, kept, from, text };
    from = kept;
    return entry;
  });
}

/** A note for a step where every listed alternative but the chosen token was removed — a grammar
 *  leaving only what the constraint allows — or null. It names the stages and how many tokens were
 *  left to pick from, and says when the model itself rated them all above the chosen token. */
export function allRemovedNote(token) {
  const others = (token.alternatives ?? []).filter((alt) => alt.id !== token.id);
  if (!others.length || others.some((alt) => !alt.removed_by)) return null;
  const by = [...new Set(others.map((alt) => alt.removed_by))].join(" and ");
  const left = token.stages?.length ? token.stages[token.stages.length - 1].kept : null;
  const listed = others.length === 1 ? "The other listed alternative was" : `All ${others.length} other listed alternatives were`;
  const above = others.every((alt) => alt.raw_prob > token.raw_prob) ? ", though the model rated each above the chosen token" : "";
  const pool = left === null ? "" : `; the pick was among the ${formatCount(left)} token${left === 1 ? "" : "s"} left`;
  return `${listed} removed by ${by}${above}${pool}.`;
}
