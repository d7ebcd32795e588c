// The chosen model and the form's mode: a model without a chat template (a base model) cannot
// run chat mode, so the Chat choice is disabled and the server's reason is shown under it, never
// silently; a form in chat mode moves to completion and says so.

import { chatUnavailable, modelLabel } from "../../shared/js/models.js";

/** Enables or disables chat mode for `model` (the picker's facts; null: not known yet, left as
 *  it is). Returns a sentence when the form was moved out of chat mode, else null. */
export function applyChatAvailability(form, model, note) {
  if (!model) return null;
  const why = chatUnavailable(model);
  const chat = form.form.querySelector("input[name=mode][value=chat]");
  chat.disabled = Boolean(why);
  chat.closest("label")?.classList.toggle("disabled", Boolean(why));
  note.textContent = why ? `Chat is off for ${modelLabel(model)}: ${why}.` : "";
  note.hidden = !why;
  if (why && form.mode === "chat") {
    form.apply({ mode: "completion" });
    return `Completion mode: ${why}.`;
  }
  return null;
}
