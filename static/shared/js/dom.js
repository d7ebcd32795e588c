// Creating HTML elements, for every page module: text goes in only with textContent, attributes
// only as values. One helper and one argument order everywhere: el(tag, classOrAttributes, text).

import { formatProb } from "./format.js";

/** A new `tag` element. `props` is a class name, or an object of attributes (`className` sets the
 *  class; true → present and empty; false, null and undefined → left out). `text` → textContent. */
export function el(tag, props = null, text = undefined) {
  const node = document.createElement(tag);
  if (typeof props === "string") {
    node.className = props;
  } else if (props) {
    for (const [name, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "className") node.className = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

/** A table cell with a probability as a bar (`kind` "raw" or "final" styles it) and as text. */
export function barCell(kind, p, { cellClass = `num ${kind}` } = {}) {
  const cell = el("td", cellClass);
  const track = el("span", "bar");
  const fill = el("span", `fill ${kind}`);
  fill.style.width = `${Math.max(0, Math.min(1, p)) * 100}%`;
  track.append(fill);
  cell.append(track, el("span", "value", formatProb(p)));
  return cell;
}

/** Empties and hides every `.field-error` under `root` and drops the invalid marks (`aria-invalid`,
 * `.has-error`) a form's failed check left. */
export function clearFieldErrors(root) {
  for (const slot of root.querySelectorAll(".field-error")) {
    slot.textContent = "";
    slot.hidden = true;
  }
  for (const node of root.querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
  for (const node of root.querySelectorAll(".has-error")) node.classList.remove("has-error");
}
