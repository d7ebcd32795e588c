// The batch view's lanes as a form: one fieldset per prompt (1 to the page's maximum), each with its
// own prompt, mode and settings. A setting's label, explanation, range and "off" value are the
// parameter table's (params-schema.js: the server's facts joined with the page's labels), so
// nothing here repeats a fact. Reads one `generate` body per lane and shows the server's errors
// beside the field `error.param` names, in the lane that sent it.

import { clearFieldErrors, el } from "../../shared/js/dom.js";
import { paramText } from "../../shared/js/address.js";
import { PARAM_BY_KEY, SCHEMA, initialValue } from "./params-schema.js";
import { seedValue } from "../../shared/js/socket.js";
import { FieldError, numberOrText, paramsFromJsonBox } from "../../shared/js/typed-params.js";
import { errorText, inWords } from "./field-names.js";

/** The settings each lane has a field for; any other parameter goes in the lane's JSON box. */
export const LANE_KEYS = ["temperature", "top_p", "max_tokens", "seed"];

// The first lanes: the batch of four prompts from the seed texts' section "Batched Generation",
// which "all generate in parallel, but finish at different times". Instructions, so chat mode.
export const START_LANES = [
  { prompt: "What is the capital of France?", mode: "chat", max_tokens: "48" },
  { prompt: "Explain quantum computing", mode: "chat", max_tokens: "64" },
  { prompt: "Write a haiku about cats", mode: "chat", max_tokens: "40" },
  { prompt: "Translate to Spanish: Hello", mode: "chat", max_tokens: "24" },
];
const NEW_LANE = { prompt: "Once upon a time", mode: "completion", max_tokens: "32" };
const TOP_N = 5;

function field(n, key, labelText, control, hintText) {
  const id = `lane${n}-${key}`;
  control.id = id;
  control.name = key;
  control.setAttribute("aria-describedby", `${id}-hint ${id}-error`);
  const wrap = el("div", { className: `field lane-field-${key}`, "data-field": key });
  wrap.append(el("label", { for: id }, labelText), control,
    el("p", { id: `${id}-hint`, className: "hint" }, hintText),
    el("p", { id: `${id}-error`, className: "field-error", hidden: true }));
  return wrap;
}

function paramField(n, key, text) {
  const spec = PARAM_BY_KEY[key];
  const control = el("input", { type: "text", autocomplete: "off", spellcheck: "false",
    inputmode: spec.kind === "integer" || spec.kind === "seed" ? "numeric" : "decimal" });
  control.value = text ?? paramText(SCHEMA, key, initialValue(spec));
  const hint = key === "seed" ? `${spec.range}; empty: drawn at random.` : `${spec.range}; off: ${spec.offText}.`;
  return field(n, key, spec.label, control, hint);
}

export class LaneForm {
  /** @param root  the lanes' container; @param maxLanes  the most lanes (one socket's limit) */
  constructor(root, maxLanes) {
    this.root = root;
    this.maxLanes = maxLanes;
    for (const start of START_LANES.slice(0, maxLanes)) this.add(start);
  }

  get count() {
    return this.root.querySelectorAll("fieldset.lane-settings").length;
  }

  fieldsets() {
    return [...this.root.querySelectorAll("fieldset.lane-settings")];
  }

  /** Adds a lane (with these starting texts); false when the page has its most lanes already. */
  add(start = NEW_LANE) {
    const n = this.count + 1;
    if (n > this.maxLanes) return false;
    const set = el("fieldset", { className: "lane-settings", id: `lane${n}-settings`, "data-lane": n });
    set.append(el("legend", {}, `Lane ${n}`));
    const prompt = el("textarea", { rows: 2 });
    prompt.value = start.prompt ?? "";
    const mode = el("select");
    for (const [value, text] of [["completion", "Completion"], ["chat", "Chat"]]) mode.append(el("option", { value }, text));
    mode.value = start.mode ?? "completion";
    const other = el("textarea", { rows: 1, spellcheck: "false", placeholder: '{"top_k": 40}' });
    const grid = el("div", "field-grid lane-grid");
    for (const key of LANE_KEYS) grid.append(paramField(n, key, start[key]));
    set.append(
      field(n, "prompt", "Prompt", prompt, "This lane's text."),
      field(n, "mode", "Mode", mode, "Chat wraps the prompt as a user message."),
      grid,
      field(n, "other", "Other parameters (JSON)", other, "Any parameter of the sampling docs, e.g. {\"min_p\": 0.05}."),
      el("p", { id: `lane${n}-error`, className: "field-error", hidden: true }),
    );
    this.root.append(set);
    return true;
  }

  /** Removes the last lane (one always stays); false when only one is left. */
  removeLast() {
    const sets = this.fieldsets();
    if (sets.length <= 1) return false;
    sets.at(-1).remove();
    return true;
  }

  /** One entry per lane: {body} to send, or {error: {param, message}}. */
  read() {
    return this.fieldsets().map((set, i) => {
      const n = i + 1;
      const value = (key) => set.querySelector(`#lane${n}-${key}`).value;
      try {
        const params = {};
        for (const key of LANE_KEYS) {
          const text = value(key);
          if (key === "seed") params.seed = text.trim() === "" ? null : seedValue(text);
          else if (text.trim() !== "") params[key] = numberOrText(text);
        }
        const elsewhere = Object.fromEntries(LANE_KEYS.map((key) => [key, "has its own field above; set it there"]));
        Object.assign(params, paramsFromJsonBox(value("other"), "other", '{"min_p": 0.05}', elsewhere));
        return { body: { prompt: value("prompt"), mode: value("mode"), params, top_n: TOP_N } };
      } catch (error) {
        if (error instanceof FieldError) return { error: { param: error.param, message: error.message } };
        throw error;
      }
    });
  }

  /** The field for an error's dotted `param` in lane n: a lane field, the JSON box for another
   *  parameter, or the lane's own error line. */
  #slotFor(n, param) {
    if (param === "prompt" || param === "mode" || param === "other") return param;
    const [head, key] = String(param ?? "").split(".");
    if (head !== "params") return null;
    return LANE_KEYS.includes(key) ? key : "other";
  }

  /** Shows `message` beside the field `param` names in lane n (1-based); returns what to focus. */
  showError(n, param, message) {
    const key = this.#slotFor(n, param);
    const control = key && this.root.querySelector(`#lane${n}-${key}`);
    const slot = control ? this.root.querySelector(`#lane${n}-${key}-error`) : this.root.querySelector(`#lane${n}-error`);
    if (!slot) return null;
    slot.textContent = control ? inWords(message, param) : errorText(message, param); // the page's names, not the API's
    slot.hidden = false;
    if (control) {
      control.setAttribute("aria-invalid", "true");
      control.closest(".field")?.classList.add("has-error");
    }
    return control ?? slot;
  }

  clearErrors() {
    clearFieldErrors(this.root);
  }

  /** The lane's prompt in a few words, for its output's heading. */
  describe(n) {
    const prompt = this.root.querySelector(`#lane${n}-prompt`)?.value ?? "";
    return prompt.length > 48 ? `${prompt.slice(0, 47)}…` : prompt;
  }

  setRunning(running) {
    for (const set of this.fieldsets()) set.disabled = running;
  }
}
