// Speculative decoding's settings (templates/playground/_speculative_field.html): the switch, the
// draft source, k and "keep drafting" (`switch_off: false`), read into the request's
// `params.speculative` ({"draft", "k"}, with "switch_off": false when kept drafting; left out when
// off) and kept as one text in the address and the presets (JSON, as the wire writes it).
//
// The draft sources and k's range come from the server's facts when it states them (the
// `speculative` property of the parameter schema); otherwise the page offers prompt lookup and
// the `fast` draft model, and the server's error names a draft it cannot load, beside the field.

import { speculativeText, speculativeValue } from "../../shared/js/address.js";

/** What the page calls each draft source; a source the server names that is not here shows its name. */
const DRAFT_NAMES = { prompt_lookup: "Prompt lookup", fast: "Draft model (fast)" };

/** Draft sources and k's range: the facts' when given, else the documented ones. */
export function speculativeFacts(prop) {
  const fields = prop?.properties ?? prop?.anyOf?.find((p) => p.type === "object")?.properties ?? {};
  const k = fields.k ?? {};
  return {
    drafts: fields.draft?.enum ?? Object.keys(DRAFT_NAMES),
    draftDefault: fields.draft?.default ?? "prompt_lookup",
    kMin: k.minimum ?? 1,
    kMax: k.maximum ?? 8,
    kDefault: k.default ?? 4,
  };
}

/** The control an error's dotted `param` names: "params.speculative.k" → the k field, …draft →
 *  the draft, …switch_off → "keep drafting", "params.speculative" itself → the switch; null for
 *  any other field. */
export function speculativeFieldFor(param) {
  if (param === "params.speculative") return "speculative-on";
  if (param === "params.speculative.k") return "speculative-k";
  if (param === "params.speculative.draft") return "speculative-draft";
  if (param === "params.speculative.switch_off") return "speculative-keep-drafting";
  return null;
}

export class SpeculativeSettings extends EventTarget {
  /** @param root  the group (#speculative-editor); @param prop  the schema's `speculative` property, if any */
  constructor(root, prop) {
    super();
    this.root = root;
    this.facts = speculativeFacts(prop);
    this.on = root.querySelector("#speculative-on");
    this.draft = root.querySelector("#speculative-draft");
    this.k = root.querySelector("#speculative-k");
    this.keep = root.querySelector("#speculative-keep-drafting"); // checked: switch_off false
    for (const name of this.facts.drafts) {
      const option = document.createElement("option");
      option.value = name;
      option.textContent = DRAFT_NAMES[name] ?? name;
      this.draft.append(option);
    }
    this.k.min = String(this.facts.kMin);
    this.k.max = String(this.facts.kMax);
    root.querySelector("#speculative-k-hint").textContent =
      `How many tokens the draft proposes per step, ${this.facts.kMin}–${this.facts.kMax}. ` +
      "Each step gives 1 to k + 1 tokens for one pass of the model.";
    this.#reset();
    this.#sync();
    this.on.addEventListener("change", () => this.#sync());
  }

  #reset() {
    this.on.checked = false;
    this.draft.value = this.facts.draftDefault;
    this.k.value = String(this.facts.kDefault);
    this.keep.checked = false;
  }

  /** The draft, k and "keep drafting" are only asked while the switch is on. */
  #sync() {
    this.draft.disabled = !this.on.checked;
    this.k.disabled = !this.on.checked;
    this.keep.disabled = !this.on.checked;
  }

  /** `params.speculative` as typed, or null when off; a k that is not a number goes to `errors`
   *  ({param, message}, as the server names it) and nothing is returned for it. */
  read(errors = []) {
    if (!this.on.checked) return null;
    if (this.k.validity.badInput) {
      errors.push({ param: "params.speculative.k", message: "params.speculative.k must be a number" });
      return null;
    }
    const value = { draft: this.draft.value };
    if (this.k.value !== "") value.k = Number(this.k.value);
    if (this.keep.checked) value.switch_off = false;
    return value;
  }

  /** The settings as the address keeps them ("" when off). */
  text() {
    if (!this.on.checked) return "";
    const k = this.k.value === "" ? null : Number(this.k.value);
    return speculativeText({ draft: this.draft.value, k, ...(this.keep.checked ? { switch_off: false } : {}) });
  }

  /** Sets the controls from an address text (or a run's value); "" or malformed: off. */
  setText(text) {
    this.setValue(speculativeValue(text));
  }

  setValue(value) {
    this.#reset();
    if (value) {
      this.on.checked = true;
      if (value.draft !== undefined) {
        if (![...this.draft.options].some((o) => o.value === value.draft)) {
          // a name the page does not list: offered as it is, and the server judges it
          const option = document.createElement("option");
          option.value = String(value.draft);
          option.textContent = String(value.draft);
          this.draft.append(option);
        }
        this.draft.value = String(value.draft);
      }
      if (value.k !== undefined && value.k !== null) this.k.value = String(value.k);
      this.keep.checked = value.switch_off === false;
      this.root.open = true;
    }
    this.#sync();
  }
}
