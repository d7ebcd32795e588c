// Settings in the address: every setting that differs from a fresh page's goes into the query
// string (replaceState, so a reload or a copied address restores it). Keys are the wire names
// (`temperature=0.7`, `top_p=0.9`, `prompt=…`, `mode=chat`, `top_n=10`, `no_cache=1`), plus
// `sampler_order` (comma-separated stage names) and `logit_bias` (JSON [[id, bias, text], …]).
// Values are the text typed in the controls. Pure functions: no DOM, no history.

/** The query string for `values` (control text by key) against `initial`, plus the editors'. */
export function encodeSettings(values, initial, { order = null, bias = [] } = {}) {
  const query = new URLSearchParams();
  for (const [key, text] of Object.entries(values)) {
    if (text !== initial[key]) query.set(key, text);
  }
  if (order) query.set("sampler_order", order.join(","));
  if (bias.length) query.set("logit_bias", JSON.stringify(bias));
  return query.toString();
}

/** {values, order, bias} from a query string; keys not in `known` are ignored. */
export function decodeSettings(search, known) {
  const query = new URLSearchParams(search);
  const values = {};
  for (const [key, text] of query) if (known.has(key)) values[key] = text;
  const orderText = query.get("sampler_order");
  const order = orderText ? orderText.split(",").filter(Boolean) : null;
  let bias = [];
  try {
    const parsed = JSON.parse(query.get("logit_bias") ?? "[]");
    if (Array.isArray(parsed)) bias = parsed.filter((e) => Array.isArray(e) && e.length >= 2);
  } catch {
    bias = [];
  }
  return { values, order, bias };
}
