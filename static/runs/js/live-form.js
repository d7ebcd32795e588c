// The live comparison's form: the server renders four columns of fields, this shows 2–4 of them,
// reads and writes the settings' texts, and puts errors next to the field they name.

import { clearFieldErrors, el } from "../../shared/js/dom.js";
import { LABELS } from "../../playground/js/param-labels.js";
import { errorText, inWords } from "../../playground/js/field-names.js";
import { ModelPicker } from "../../shared/js/model-picker.js";
import { emptyColumn, fieldFor, MAX_COLUMNS, MIN_COLUMNS, SHARED } from "./live-settings.js";

const LABEL_BY_KEY = Object.fromEntries(LABELS.map((label) => [label.key, label.label]));

export class LiveForm {
  constructor(form) {
    this.form = form;
    this.fieldsets = [...form.querySelectorAll("fieldset[data-column]")];
    // each column's model (model-picker.js); a change reaches the form as an "input"
    this.pickers = this.fieldsets.map((fieldset) => new ModelPicker(fieldset.querySelector("[data-model-picker]")));
    for (const picker of this.pickers) {
      picker.addEventListener("change", () => this.form.dispatchEvent(new Event("input", { bubbles: true })));
    }
    for (const label of form.querySelectorAll("label[data-label]")) {
      label.textContent = LABEL_BY_KEY[label.dataset.label] ?? label.dataset.label;
    }
    this.addButton = form.querySelector("[data-action=add-column]");
    this.removeButton = form.querySelector("[data-action=remove-column]");
    this.addButton.addEventListener("click", () => this.#setCount(this.count + 1, true));
    this.removeButton.addEventListener("click", () => this.#setCount(this.count - 1, true));
    this.#field("mode").addEventListener("change", () => this.#showSystem());
    this.turns = []; // a chat conversation's earlier turns, [{role, content}]: shown, not edited
    this.turnsField = form.querySelector("[data-live-turns]");
    form.querySelector("[data-action=drop-turns]").addEventListener("click", () => {
      this.#setTurns([]);
      this.form.dispatchEvent(new Event("input", { bubbles: true })); // the address follows
    });
    this.#setCount(this.fieldsets.filter((f) => !f.hidden).length);
    this.#showSystem();
  }

  get count() {
    return this.fieldsets.filter((f) => !f.hidden).length;
  }

  #field(name) {
    return this.form.querySelector(`#live-${name}`);
  }

  #input(n, key) {
    return this.form.querySelector(`#c${n}-${key}`);
  }

  #setCount(count, announce = false) {
    const clamped = Math.min(MAX_COLUMNS, Math.max(MIN_COLUMNS, count));
    this.fieldsets.forEach((fieldset, i) => {
      fieldset.hidden = i >= clamped;
      fieldset.disabled = i >= clamped;
    });
    this.addButton.disabled = clamped >= MAX_COLUMNS;
    this.removeButton.disabled = clamped <= MIN_COLUMNS;
    if (announce) {
      this.fieldsets[clamped - 1].querySelector("input").focus();
      this.form.dispatchEvent(new Event("input", { bubbles: true })); // the address follows
    }
  }

  #showSystem() {
    const chat = this.#field("mode").value === "chat";
    for (const node of this.form.querySelectorAll("[data-chat-only]")) node.hidden = !chat;
    this.turnsField.hidden = !chat || !this.turns.length;
  }

  #setTurns(turns) {
    this.turns = turns.map(({ role, content }) => ({ role, content }));
    const list = this.turnsField.querySelector("[data-turns]");
    list.replaceChildren(
      ...this.turns.map(({ role, content }) => {
        const item = el("li", { className: `turn turn-${role}`, "data-role": role });
        item.append(el("p", "turn-head", role), el("pre", "prompt-text", content));
        return item;
      }),
    );
    this.#showSystem();
  }

  /** The settings' texts, for the visible columns. */
  read() {
    const columns = [];
    for (let n = 1; n <= this.count; n++) {
      const column = emptyColumn();
      for (const key of Object.keys(column)) column[key] = key === "model" ? this.pickers[n - 1].value : this.#input(n, key).value;
      columns.push(column);
    }
    const value = (name) => this.#field(name).value;
    const settings = { prompt: value("prompt"), mode: value("mode"), system: value("system"), columns };
    settings.turns = this.turns;
    settings.assistant_prefix = value("assistant_prefix");
    for (const key of SHARED) settings[key] = value(key);
    return settings;
  }

  write(settings) {
    for (const name of ["prompt", "mode", "system", "assistant_prefix", ...SHARED]) this.#field(name).value = settings[name] ?? "";
    this.#setTurns(settings.turns ?? []);
    this.#setCount(settings.columns.length);
    settings.columns.forEach((column, i) => {
      for (const [key, text] of Object.entries(column)) {
        if (key === "model") this.pickers[i].set(text);
        else this.#input(i + 1, key).value = text;
      }
    });
    this.#showSystem();
  }

  /** Column n's (1-based) model: {id, label} (label: its display name, else its id). */
  model(n) {
    const picker = this.pickers[n - 1];
    return { id: picker.value, label: picker.model?.display_name ?? picker.value };
  }

  /** Every picker has the list of models (or could not get it). */
  get ready() {
    return Promise.all(this.pickers.map((p) => p.ready));
  }

  get seed() {
    return this.#field("seed").value.trim();
  }

  set seed(text) {
    this.#field("seed").value = text;
  }

  setRunning(running) {
    this.form.querySelector("[data-action=run]").disabled = running;
    this.form.querySelector("[data-action=stop]").disabled = !running;
  }

  clearErrors() {
    clearFieldErrors(this.form);
  }

  /** Shows an error of column n (1-based) next to the field its `param` names, or on the column.
   *  Returns the element that shows it. */
  showError(n, param, message) {
    const id = fieldFor(param, n);
    const input = id ? this.form.querySelector(`#${id}`) : null;
    const target = this.form.querySelector(input ? `#${id}-error` : `#c${n}-error`);
    const text = input ? inWords(message, param) : errorText(message, param); // the page's names, not the API's
    // A shared field may be named by every column; say it once.
    if (!target.hidden && target.textContent !== text) target.textContent += ` ${text}`;
    else target.textContent = text;
    target.hidden = false;
    input?.setAttribute("aria-invalid", "true");
    return target;
  }

  /** Moves focus to the first field marked invalid. */
  focusFirstError() {
    this.form.querySelector("[aria-invalid=true]")?.focus();
  }
}
