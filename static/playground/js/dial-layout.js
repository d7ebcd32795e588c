// How the form lays out its dials for a newcomer: the few that matter most in one open group, every
// other dial in its own group (param-labels.js's groups), closed until opened on purpose. A closed
// group opens by itself only when a setting the page was given (its address, a preset) moves one of
// its dials; the page keeps no memory of which groups a person opened. Pure: no DOM.

/** The dials a newcomer sees first, in this order. */
export const ESSENTIAL_KEYS = ["temperature", "top_k", "top_p", "min_p", "max_tokens", "seed"];

export const ESSENTIALS = {
  id: "essentials",
  title: "Main dials",
  about: "The few that shape most runs: how random each pick is, which tokens stay in the running, how long the text may grow, and the seed of the random draws.",
};

/** The form's groups in order, each `{id, title, about, open, params}`: the essentials first and
 *  open, then every group of `groups` that keeps a dial, closed. `params` are the parameter
 *  specs (`key`, `group`), in the page's order. */
export function dialLayout(groups, params) {
  const byKey = new Map(params.map((p) => [p.key, p]));
  const essentials = ESSENTIAL_KEYS.filter((key) => byKey.has(key)).map((key) => byKey.get(key));
  const rest = groups
    .map((group) => ({
      id: group.id, title: group.title, about: group.about, open: false,
      params: params.filter((p) => p.group === group.id && !ESSENTIAL_KEYS.includes(p.key)),
    }))
    .filter((group) => group.params.length);
  return [{ ...ESSENTIALS, open: true, params: essentials }, ...rest];
}

/** The ids of the closed groups `values` (control texts by key) move a dial of away from
 *  `initial` (the fresh form's texts): the groups to open so no setting in force is hidden. */
export function groupsToOpen(layout, values, initial) {
  const open = new Set();
  for (const group of layout) {
    if (group.open) continue;
    if (group.params.some((p) => p.key in values && values[p.key] !== initial[p.key])) open.add(group.id);
  }
  return open;
}
