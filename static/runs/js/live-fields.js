// The live comparison's fields, as the server rendered them into the page (json_script
// "live-fields", from playground/edge/param_facts.py): the parameters shared by every column and those
// each column has its own field for. Any other parameter goes in a column's JSON box.

const fields = JSON.parse(document.getElementById("live-fields").textContent);

/** Each column's own fields (wire names). */
export const FIELDS = fields.column.map((field) => field.key);

/** The fields shared by every column (wire names). */
export const SHARED = [...fields.shared];
