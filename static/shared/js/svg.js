// A tiny helper for the page's own SVG charts: elements with attributes, text via textContent.

const NS = "http://www.w3.org/2000/svg";

/** An SVG element with attributes; `text` goes in as textContent. */
export function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) node.setAttribute(name, String(value));
  }
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A <title> child: the hover tooltip and the accessible name of a chart mark. */
export function titled(node, text) {
  node.append(svg("title", {}, text));
  return node;
}

/** Rounds a coordinate for compact markup. */
export function r2(x) {
  return Math.round(x * 100) / 100;
}
