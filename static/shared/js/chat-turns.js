// Chat mode's conversation: turns before the prompt (each a role and its text) and an optional
// start of the assistant's answer for the model to continue. With neither, the request stays the
// one-turn `prompt` + `system` frame; otherwise it becomes `messages` (docs/websocket-api.md),
// rendered on the server by the model's own chat template.

import { el } from "./dom.js";

const ROLES = [["user", "User"], ["assistant", "Assistant"], ["system", "System"]];

export class ChatTurns {
  /** @param root  the turns' field (holds [data-turns] and [data-action=add-turn]);
   *  @param prefix  the textarea of the assistant's answer start */
  constructor(root, prefix) {
    this.root = root;
    this.prefix = prefix;
    this.list = root.querySelector("[data-turns]");
    root.querySelector("[data-action=add-turn]").addEventListener("click", () => {
      const last = this.turns.at(-1);
      this.add(last?.role === "user" ? "assistant" : "user", "").querySelector("textarea").focus();
    });
  }

  /** Replaces the turns and the answer's start (a saved run's conversation, from the address). */
  set(turns, prefix = "") {
    this.list.replaceChildren();
    for (const { role, content } of turns) this.add(role, content);
    this.prefix.value = prefix;
  }

  /** Appends a turn; returns its row. */
  add(role, content) {
    const number = this.list.children.length + 1;
    const row = el("li", { className: "chat-turn", "data-turn": "" });
    const roleId = `turn-${crypto.randomUUID()}`;
    const select = el("select", { id: roleId, "data-turn-role": "", "aria-label": `Turn ${number}: role` });
    for (const [value, text] of ROLES) select.append(el("option", { value }, text));
    select.value = role;
    const text = el("textarea", { rows: 2, "data-turn-content": "", "aria-label": `Turn ${number}: text` });
    text.value = content;
    const remove = el("button", { type: "button", className: "link", "aria-label": `Remove turn ${number}` }, "Remove");
    remove.addEventListener("click", () => {
      row.remove();
      this.#renumber();
      this.root.dispatchEvent(new Event("input", { bubbles: true }));
    });
    row.append(select, text, remove);
    this.list.append(row);
    this.root.dispatchEvent(new Event("input", { bubbles: true }));
    return row;
  }

  #renumber() {
    [...this.list.children].forEach((row, i) => {
      row.querySelector("[data-turn-role]").setAttribute("aria-label", `Turn ${i + 1}: role`);
      row.querySelector("[data-turn-content]").setAttribute("aria-label", `Turn ${i + 1}: text`);
      row.querySelector("button").setAttribute("aria-label", `Remove turn ${i + 1}`);
    });
  }

  /** The earlier turns, in order: [{role, content}]. */
  get turns() {
    return [...this.list.querySelectorAll("[data-turn]")].map((row) => ({
      role: row.querySelector("[data-turn-role]").value,
      content: row.querySelector("[data-turn-content]").value,
    }));
  }

  /** {messages, continue_final_message} for a chat request of this prompt and system message, or
   *  null when there is nothing beyond one turn (the request keeps `prompt` and `system`). */
  conversation(prompt, system) {
    return chatConversation(this.turns, prompt, system, this.prefix.value);
  }
}

/** {messages, continue_final_message} of a chat request: the system message (when not blank),
 *  the earlier turns, the prompt as the last user turn and the answer's start (`start`, continued
 *  when not empty); null when there are no turns and no start (the request keeps `prompt` and
 *  `system`). Shared by the page and the live comparison. */
export function chatConversation(turns, prompt, system, start) {
  if (!turns.length && start === "") return null;
  const messages = [];
  if (system.trim() !== "") messages.push({ role: "system", content: system });
  messages.push(...turns, { role: "user", content: prompt });
  if (start !== "") messages.push({ role: "assistant", content: start });
  return { messages, continue_final_message: start !== "" };
}
