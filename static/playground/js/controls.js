// The parameters form: reads the request to send, shows errors next to the fields they name.
//
// The server is the one judge of valid values (docs/websocket-api.md): the form sends what was
// typed and shows the server's message beside the field named by `error.param`. It only refuses
// what cannot be sent at all — a number field whose text is not a number.

import { seedValue } from "./socket.js";

// `error.param` (a dotted path) → the id of the control it is about. An "off" value of each
// sampler setting is noted in the template's hint next to the control.
const PARAM_FIELDS = {
  prompt: "prompt",
  mode: "mode",
  top_n: "top-n",
  "params.temperature": "temperature",
  "params.top_p": "top-p",
  "params.max_tokens": "max-tokens",
  "params.seed": "seed",
};

// Numeric params: control id → key in `params`. An empty field leaves the server's default.
const NUMBER_PARAMS = { temperature: "temperature", "top-p": "top_p", "max-tokens": "max_tokens" };

export class ParamsForm {
  constructor(form) {
    this.form = form;
    this.generateButton = form.querySelector("[data-action=generate]");
    this.stopButton = form.querySelector("[data-action=stop]");
    this.generalError = form.querySelector("[data-general-error]");
  }

  control(id) {
    return this.form.querySelector(`#${id}`);
  }

  /** {request} ready for the socket, or {errors: [{param, message}]} for what cannot be sent. */
  read() {
    const errors = [];
    const params = {};
    for (const [id, key] of Object.entries(NUMBER_PARAMS)) {
      const value = this.#number(id, `params.${key}`, errors);
      if (value !== undefined) params[key] = value;
    }
    const seedText = this.control("seed").value;
    params.seed = seedText.trim() === "" ? null : seedValue(seedText);
    const request = {
      prompt: this.control("prompt").value,
      mode: this.form.elements.mode.value,
      params,
    };
    const topN = this.#number("top-n", "top_n", errors);
    if (topN !== undefined) request.top_n = topN;
    return errors.length ? { errors } : { request };
  }

  #number(id, param, errors) {
    const input = this.control(id);
    if (input.validity.badInput) {
      errors.push({ param, message: `${param} must be a number` });
      return undefined;
    }
    return input.value === "" ? undefined : Number(input.value);
  }

  /** Shows a message beside the control `param` names, or in the general slot. Returns the
   *  element to focus so the user lands on the problem. */
  showError(param, message) {
    const id = fieldFor(param);
    const slot = id && this.form.querySelector(`#${id}-error`);
    if (!slot) {
      this.generalError.textContent = param ? `${param}: ${message}` : message;
      this.generalError.hidden = false;
      return this.generateButton;
    }
    slot.textContent = message;
    slot.hidden = false;
    const target = id === "mode" ? this.form.querySelector("input[name=mode]:checked") : this.control(id);
    const holder = id === "mode" ? this.control("mode") : target;
    holder.setAttribute("aria-invalid", "true");
    holder.closest(".field")?.classList.add("has-error");
    return target;
  }

  clearErrors() {
    for (const slot of this.form.querySelectorAll(".field-error")) {
      slot.textContent = "";
      slot.hidden = true;
    }
    for (const field of this.form.querySelectorAll("[aria-invalid]")) field.removeAttribute("aria-invalid");
    for (const field of this.form.querySelectorAll(".has-error")) field.classList.remove("has-error");
    this.generalError.textContent = "";
    this.generalError.hidden = true;
  }

  /** While a run streams, Generate is off and Stop is on. */
  setRunning(running) {
    this.generateButton.disabled = running;
    this.stopButton.disabled = !running;
    this.form.setAttribute("aria-busy", String(running));
  }

  setSeed(seed) {
    this.control("seed").value = seed;
  }
}

/** The control id for an error's dotted `param` ("params.stop.0" → none; "params.seed" → "seed"). */
export function fieldFor(param) {
  if (!param) return null;
  if (PARAM_FIELDS[param]) return PARAM_FIELDS[param];
  const parent = param.split(".").slice(0, 2).join(".");
  return PARAM_FIELDS[parent] ?? null;
}
