// Typed texts into a `generate` frame's params: a number field's text, and the JSON box where any
// other parameter is written. Errors found here are named like the server's (`param` is the field
// the message belongs to), so a form shows them where it shows the server's. Pure: no DOM.

/** A problem found before sending, named like a server error (`param` is a field's wire path). */
export class FieldError extends Error {
  constructor(param, message) {
    super(message);
    this.param = param;
  }
}

/** A typed number as a JSON number; anything else as the text, for the server to judge. */
export function numberOrText(text) {
  const trimmed = text.trim();
  const number = Number(trimmed);
  return trimmed !== "" && Number.isFinite(number) ? number : trimmed;
}

/**
 * The parameters typed in a JSON box as an object ({} when the box is empty). Throws FieldError
 * (named `param`) for text that is not a JSON object, or that sets a key the form has a field
 * for: `elsewhere` maps such keys to where they are set ("above", "every column"…).
 */
export function paramsFromJsonBox(text, param, example, elsewhere) {
  if (!text.trim()) return {};
  let other;
  try {
    other = JSON.parse(text);
  } catch (error) {
    throw new FieldError(param, `not valid JSON: ${error.message}`);
  }
  if (other === null || typeof other !== "object" || Array.isArray(other)) {
    throw new FieldError(param, `must be a JSON object, like ${example}`);
  }
  for (const key of Object.keys(other)) {
    if (key in elsewhere) throw new FieldError(param, `${key} ${elsewhere[key]}`);
  }
  return other;
}
