// The parameters form: builds a control for every parameter in params-schema.js (grouped as
// dial-layout.js says: the main dials open, the rest closed; each with its one-line explanation, and the server's range and "off" value), reads the request to send, and shows
// errors next to the fields they name.
//
// The server is the one judge of valid values (docs/websocket-api.md): the form sends what was
// typed and shows the server's message beside the field named by `error.param`. It only refuses
// what cannot be sent at all — a number field whose text is not a number.
//
// Settings as strings (`values()` / `apply()`) are what the URL and the presets keep: exactly what
// was typed, so a 19-digit seed survives.

import { clearFieldErrors, el } from "../../shared/js/dom.js";
import { listValue, paramText } from "../../shared/js/address.js";
import { GROUPS, PARAMS, PARAM_BY_KEY, SCHEMA, controlId, initialValue } from "./params-schema.js";
import { dialLayout, groupsToOpen } from "./dial-layout.js";
import { seedValue } from "../../shared/js/socket.js";
import { speculativeFieldFor } from "./speculative-panel.js";
import { errorText, inWords } from "./field-names.js";

// Fields of the request that are not sampler params: `error.param` → control id.
const REQUEST_FIELDS = { model: "model", prompt: "prompt", mode: "mode", system: "system", top_n: "top-n", watch: "watch-words" };

/** The string a control shows for a parameter value (the address format's, address.js). */
function controlText(spec, value) {
  return paramText(SCHEMA, spec.key, value);
}

function buildField(spec) {
  const id = controlId(spec.key);
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const field = el("div", { className: `field field-${spec.kind}`, "data-param": spec.key });
  const described = `${hintId} ${errorId}`;
  const initial = initialValue(spec);
  let control;
  if (spec.kind === "bool") {
    control = el("input", { id, name: spec.key, type: "checkbox", "aria-describedby": described });
    control.checked = Boolean(initial);
    const label = el("label", { for: id, className: "check" });
    label.append(control, ` ${spec.label}`);
    field.append(label);
  } else {
    field.append(el("label", { for: id }, spec.label));
    if (spec.kind === "choice") {
      control = el("select", { id, name: spec.key, "aria-describedby": described });
      for (const [value, text] of spec.choices) control.append(el("option", { value }, `${value} (${text})`));
      control.value = String(initial);
    } else if (spec.kind === "lines") {
      control = el("textarea", { id, name: spec.key, rows: 2, spellcheck: "false", "aria-describedby": described });
      control.value = controlText(spec, initial);
    } else if (spec.kind === "seed") {
      control = el("input", { id, name: spec.key, type: "text", inputmode: "numeric", autocomplete: "off",
        spellcheck: "false", "aria-describedby": described });
    } else {
      control = el("input", { id, name: spec.key, type: "number", step: "any", min: spec.min, max: spec.max,
        inputmode: spec.kind === "integer" ? "numeric" : "decimal", "aria-describedby": described });
      control.value = controlText(spec, initial);
    }
    field.append(control);
  }
  const hint = el("p", { id: hintId, className: "hint" });
  hint.append(el("span", { className: "about" }, spec.about), " ",
    el("span", { className: "range" }, `Range ${spec.range}; off: ${spec.offText}.`));
  field.append(hint, el("p", { id: errorId, className: "field-error", hidden: true }));
  return field;
}

export class ParamsForm {
  /** @param form  the <form>; @param groupsRoot  where the parameter groups are built */
  constructor(form, groupsRoot = form.querySelector("[data-param-groups]")) {
    this.form = form;
    this.generateButton = form.querySelector("[data-action=generate]");
    this.stopButton = form.querySelector("[data-action=stop]");
    this.generalError = form.querySelector("[data-general-error]");
    if (groupsRoot) this.#build(groupsRoot);
  }

  #build(root) {
    this.layout = dialLayout(GROUPS, PARAMS);
    for (const group of this.layout) {
      const details = el("details", { className: "param-group", "data-group": group.id, open: group.open });
      const n = group.params.length;
      const count = group.open ? "" : ` (${n} ${n === 1 ? "dial" : "dials"})`;
      const summary = el("summary", {}, `${group.title}${count}`);
      const about = el("p", { className: "hint group-about" }, group.about);
      const grid = el("div", { className: "field-grid" });
      for (const spec of group.params) grid.append(buildField(spec));
      details.append(summary, about, grid);
      root.append(details);
    }
  }

  /** Opens every closed group holding a dial that `values` (texts by key, as `apply` takes) set
   *  away from a fresh form's: a setting in force is never hidden. Closes none. */
  revealSet(values) {
    const initial = ParamsForm.initialValues();
    const ids = groupsToOpen(this.layout ?? [], values, initial);
    if (["top_n", "no_cache"].some((key) => key in values && values[key] !== initial[key])) ids.add("view");
    for (const id of ids) this.form.querySelector(`details[data-group="${id}"]`)?.setAttribute("open", "");
  }

  control(id) {
    return this.form.querySelector(`#${id}`);
  }

  /** {request} ready for the socket, or {errors: [{param, message}]} for what cannot be sent.
   *  `extra.logit_bias` / `extra.sampler_order` come from their editors, `extra.chat` is chat
   *  mode's conversation (chat-turns.js). */
  read(extra = {}) {
    const errors = [];
    const params = {};
    for (const spec of PARAMS) {
      const value = this.#paramValue(spec, errors);
      if (value === undefined) continue;
      if (spec.always || !sameValue(value, spec.off)) params[spec.key] = value;
    }
    if (extra.logit_bias && Object.keys(extra.logit_bias).length) params.logit_bias = extra.logit_bias;
    if (extra.sampler_order) params.sampler_order = extra.sampler_order;
    const request = {
      prompt: this.control("prompt").value,
      mode: this.mode,
      params,
    };
    const system = this.control("system");
    if (request.mode === "chat" && system && system.value.trim() !== "") request.system = system.value;
    const conversation = request.mode === "chat" ? extra.chat?.conversation(request.prompt, system?.value ?? "") : null;
    if (conversation) {
      // several turns, or an answer to continue: `messages` in place of `prompt` and `system`
      delete request.prompt;
      delete request.system;
      request.messages = conversation.messages;
      if (conversation.continue_final_message) request.continue_final_message = true;
    }
    const topN = this.#number(this.control("top-n"), "top_n", errors);
    if (topN !== undefined) request.top_n = topN;
    const noCache = this.control("no-cache");
    if (noCache?.checked) request.use_cache = false;
    request.prompt_scores = true; // the prompt's surprisal, read off the prefill (prompt-panel.js)
    return errors.length ? { errors } : { request };
  }

  get mode() {
    return this.form.elements.mode.value;
  }

  #paramValue(spec, errors) {
    const input = this.control(controlId(spec.key));
    if (!input) return undefined;
    switch (spec.kind) {
      case "bool":
        return input.checked;
      case "choice":
        return Number(input.value);
      case "lines":
        return listValue(SCHEMA, spec.key, input.value);
      case "seed":
        return input.value.trim() === "" ? null : seedValue(input.value);
      default:
        return this.#number(input, `params.${spec.key}`, errors);
    }
  }

  #number(input, param, errors) {
    if (input.validity.badInput) {
      errors.push({ param, message: `${param} must be a number` });
      return undefined;
    }
    return input.value === "" ? undefined : Number(input.value);
  }

  /** Every setting of the form as text, keyed by parameter (plus prompt, mode, system, top_n,
   *  no_cache): what the URL and the presets keep. */
  values() {
    const values = {
      prompt: this.control("prompt").value,
      mode: this.mode,
      system: this.control("system")?.value ?? "",
      top_n: this.control("top-n").value,
      no_cache: this.control("no-cache")?.checked ? "1" : "",
    };
    for (const spec of PARAMS) {
      const input = this.control(controlId(spec.key));
      if (!input) continue;
      values[spec.key] = spec.kind === "bool" ? (input.checked ? "1" : "") : input.value;
    }
    return values;
  }

  /** The values a fresh page starts with (for comparing and resetting); the prompt is the
   *  worked example the template puts in its field. */
  static initialValues() {
    const prompt = document.getElementById("prompt")?.defaultValue ?? "";
    const values = { prompt, mode: "completion", system: "", top_n: "5", no_cache: "" };
    for (const spec of PARAMS) values[spec.key] = controlText(spec, initialValue(spec));
    return values;
  }

  /** Sets the controls named in `values` (text, as from `values()`); others are left alone. */
  apply(values) {
    for (const [key, text] of Object.entries(values)) {
      if (key === "mode") {
        const radio = this.form.querySelector(`input[name=mode][value="${CSS.escape(String(text))}"]`);
        if (radio) radio.checked = true;
        continue;
      }
      if (key === "no_cache") {
        const box = this.control("no-cache");
        if (box) box.checked = Boolean(text);
        continue;
      }
      const id = REQUEST_FIELDS[key] ?? (PARAM_BY_KEY[key] ? controlId(key) : null);
      const input = id && this.control(id);
      if (!input) continue;
      if (input.type === "checkbox") input.checked = Boolean(text) && text !== "0" && text !== "false";
      else input.value = String(text);
    }
    this.revealSet(values);
    this.form.dispatchEvent(new Event("settingschange", { bubbles: true }));
  }

  /** Sets parameters from typed values (a preset): numbers, booleans, lists. */
  applyParams(params) {
    const values = {};
    for (const [key, value] of Object.entries(params)) {
      const spec = PARAM_BY_KEY[key];
      if (spec) values[key] = controlText(spec, value);
    }
    this.apply(values);
  }

  /** Shows a message beside the control `param` names, or in the general slot, naming fields as
   *  the page labels them (field-names.js). Returns the element to focus so the user lands on the
   *  problem. */
  showError(param, message) {
    const id = fieldFor(param);
    const slot = id && this.form.ownerDocument.querySelector(`#${id}-error`);
    if (!slot) {
      this.generalError.textContent = errorText(message, param);
      this.generalError.hidden = false;
      return this.generateButton;
    }
    slot.textContent = inWords(message, param);
    slot.hidden = false;
    const doc = this.form.ownerDocument;
    const target = id === "mode" ? this.form.querySelector("input[name=mode]:checked") : doc.getElementById(id);
    const holder = id === "mode" ? this.control("mode") : target;
    holder?.setAttribute("aria-invalid", "true");
    holder?.closest(".field")?.classList.add("has-error");
    holder?.closest("details")?.setAttribute("open", "");
    return target;
  }

  clearErrors() {
    clearFieldErrors(this.form);
    this.generalError.textContent = "";
    this.generalError.hidden = true;
  }

  /** While a run streams, Generate is off and Stop is on. */
  setRunning(running) {
    this.generateButton.disabled = running;
    this.stopButton.disabled = !running;
    for (const button of this.form.querySelectorAll("[data-while-idle]")) button.disabled = running;
    this.form.setAttribute("aria-busy", String(running));
  }

  setSeed(seed) {
    this.control("seed").value = seed;
    this.form.dispatchEvent(new Event("settingschange", { bubbles: true }));
  }
}

function sameValue(a, b) {
  if (Array.isArray(a) || Array.isArray(b)) return JSON.stringify(a) === JSON.stringify(b);
  return a === b;
}

/** The control id for an error's dotted `param` ("params.stop.0" → "stop"; "params.seed" → "seed";
 *  "params.logit_bias.7" → "logit-bias"). */
export function fieldFor(param) {
  if (!param) return null;
  if (REQUEST_FIELDS[param]) return REQUEST_FIELDS[param];
  const [head, key] = param.split(".");
  if (head === "watch") return REQUEST_FIELDS.watch; // watch.<i>: the watched-tokens field
  if (head !== "params" || !key) return null;
  if (key === "logit_bias") return "logit-bias";
  if (key === "sampler_order") return "stage-order";
  if (key === "grammar") return "grammar-source"; // the grammar editor's box, whichever part is named
  if (key === "speculative") return speculativeFieldFor(param) ?? speculativeFieldFor("params.speculative");
  return PARAM_BY_KEY[key] ? controlId(key) : null;
}
