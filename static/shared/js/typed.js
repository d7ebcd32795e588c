// Which tokens of a run the person typed: an edit's text (edit and continue) is forced after the
// kept tokens, and the request says how much of its forced prefix was typed (`typed_tokens`, the
// last ones of `prefix_tokens`; docs/websocket-api.md). Those tokens were written, not sampled:
// each says so itself (`origin` "typed", origin.js); the range titles an edit's branch.

/** The [from, to) token indexes `request` says were typed (empty when none). */
export function typedRange(request) {
  const to = request?.prefix_tokens?.length ?? 0;
  return { from: to - Math.min(to, request?.typed_tokens ?? 0), to };
}
