// Which tokens of a run the person typed: an edit's text (edit and continue) is forced after the
// kept tokens, and the request says how much of its forced prefix was typed (`typed_tokens`, the
// last ones of `prefix_tokens`; docs/websocket-api.md). Those tokens were written, not sampled.

/** The [from, to) token indexes `request` says were typed (empty when none). */
export function typedRange(request) {
  const to = request?.prefix_tokens?.length ?? 0;
  return { from: to - Math.min(to, request?.typed_tokens ?? 0), to };
}

/** Marks `token` (a token event) `typed: true` when `request` typed it; returns the token. */
export function markTyped(token, request) {
  const { from, to } = typedRange(request);
  if (token.index >= from && token.index < to) token.typed = true;
  return token;
}
