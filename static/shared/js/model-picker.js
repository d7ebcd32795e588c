// A model picker: a <select> of the served models with, beside it, what the chosen one is (base or
// instruct), its build variant and its license, named and linked. Used by the playground's form
// and by each column of the live comparison. The list comes from the server (models.js); a model
// named before the list arrives (an address) is kept and chosen when it does.
//
// Markup (templates/_model_picker.html): a <select data-model-select>, a <p data-model-facts>
// and a <p class="field-error"> beside them. Fires "change" (an Event on the picker) when the
// chosen model changes, by hand or by `set`.

import { el } from "./dom.js";
import { knowSpecialIds, knowSpecialTokens } from "./format.js";
import { KIND_TEXT, chatUnavailable, fetchModels, findModel, optionText, variantText } from "./models.js";

let listed = null; // one fetch per page, shared by every picker on it

/** The served models, fetched once per page. */
export function servedModels() {
  listed ??= fetchModels();
  return listed;
}

export class ModelPicker extends EventTarget {
  /** @param root  the element holding the select, the facts and the error line */
  constructor(root) {
    super();
    this.root = root;
    this.select = root.querySelector("[data-model-select]");
    this.facts = root.querySelector("[data-model-facts]");
    this.error = root.querySelector(".field-error");
    this.models = [];
    this.defaultId = null;
    this.pending = null; // a model named before the list came, or one the server does not list
    this.select.addEventListener("change", () => {
      this.pending = null;
      this.#changed();
    });
    this.ready = servedModels().then((list) => this.#fill(list), (error) => this.#unavailable(error));
  }

  /** The chosen model's id ("" before the list came and nothing was named). */
  get value() {
    return this.pending ?? this.select.value;
  }

  /** The chosen model's facts (null: none yet, or a name the server does not list). */
  get model() {
    return this.pending === null ? findModel(this.models, this.select.value) : null;
  }

  /** Chooses the model `key` names (its id or manifest name); an unknown name is kept and shown
   *  as an error, so it is sent and the server names the problem. Empty: the default. */
  set(key) {
    const found = findModel(this.models, key);
    if (!this.models.length) this.pending = key || null;
    else if (found || !key) {
      this.pending = null;
      this.select.value = found?.id ?? this.defaultId;
    } else this.pending = key;
    if (this.models.length) this.#changed();
  }

  #fill({ default: defaultId, models }) {
    this.models = models;
    knowSpecialTokens(models.flatMap(({ special_tokens: s }) => (s ? [s.document_start, s.bos, ...(s.eos ?? [])] : [])));
    for (const model of models) knowSpecialIds(model.id, model.special_tokens?.ids); // every control token, by id
    this.defaultId = defaultId ?? models[0].id;
    this.select.replaceChildren(...models.map((m) => el("option", { value: m.id }, optionText(m))));
    const wanted = this.pending;
    this.pending = null;
    this.set(wanted ?? this.defaultId);
  }

  #unavailable(error) {
    this.error.textContent = `The list of models could not be read (${error.message}); runs use the server's default model.`;
    this.error.hidden = false;
  }

  #changed() {
    this.#renderFacts();
    this.dispatchEvent(new Event("change"));
  }

  #renderFacts() {
    const model = this.model;
    this.error.hidden = this.pending === null;
    if (this.pending !== null) {
      this.error.textContent = `This server does not serve “${this.pending}”; it serves ${this.models.map((m) => m.id).join(", ")}.`;
      this.facts.replaceChildren();
      return;
    }
    if (!model) return;
    const license = el("a", { href: model.license.url, rel: "noopener", "data-model-license": true }, model.license.name);
    this.facts.replaceChildren(
      el("span", { "data-model-kind": model.kind }, `${KIND_TEXT[model.kind] ?? model.kind}. `),
      el("span", { "data-model-variant": true }, `Build ${variantText(model)}. `),
      ...(model.kernels ? [el("span", { "data-model-kernels": true }, `Computed by ${model.kernels}. `)] : []),
      el("span", null, `Vocabulary ${model.vocab_size?.toLocaleString("en") ?? "–"} tokens. License: `),
      license,
      ".",
    );
    const why = chatUnavailable(model);
    this.root.dataset.chat = why ? "unavailable" : "available";
  }
}
