// The page's settings as one object: the form's dials and the editors beside it (stage order,
// logit bias, grammar, watched tokens, speculative drafting, chat turns, the model). It reads
// them into a request (errors shown by their fields), into typed params (what the stage list and
// the presets compare) and into the texts a preset or the address keeps; it puts a preset back.

import { errorText } from "./field-names.js";
import { watchText } from "../../shared/js/address.js";

export class PageSettings {
  /** @param editors  { form: ParamsForm, order: StageOrder, bias: LogitBiasEditor, grammar:
   *  GrammarEditor, watchList: WatchList, speculative: SpeculativeSettings, modelPicker:
   *  ModelPicker, chatTurns: ChatTurns }; @param stats  RunStats (where a form error is said) */
  constructor({ form, order, bias, grammar, watchList, speculative, modelPicker, chatTurns }, stats) {
    this.form = form;
    this.order = order;
    this.bias = bias;
    this.grammar = grammar;
    this.watchList = watchList;
    this.speculative = speculative;
    this.modelPicker = modelPicker;
    this.chatTurns = chatTurns;
    this.stats = stats;
  }

  /** Reads the form; shows what cannot be sent. Returns the request or null. */
  readRequest() {
    const { form } = this;
    form.clearErrors();
    const read = form.read({ logit_bias: this.bias.value, sampler_order: this.order.value, chat: this.chatTurns });
    const constraint = this.grammar.read(); // a schema that is not JSON cannot be sent
    const errors = [...(read.errors ?? []), ...(constraint.error ? [constraint.error] : [])];
    const drafting = this.speculative.read(errors);
    if (errors.length) {
      let target = null;
      for (const { param, message } of errors) target ??= form.showError(param, message);
      this.stats.failed(errorText(errors[0].message, errors[0].param));
      target?.focus();
      return null;
    }
    if (constraint.grammar) read.request.params.grammar = constraint.grammar;
    if (drafting) read.request.params.speculative = drafting;
    if (this.watchList.ids.length) read.request.watch = this.watchList.ids;
    if (this.modelPicker.value) read.request.model = this.modelPicker.value;
    return read.request;
  }

  /** The form's params as typed values (what the stage list and the presets compare). */
  typedParams() {
    const read = this.form.read({ logit_bias: this.bias.value });
    const constraint = this.grammar.read().grammar;
    return { ...read.request?.params, ...(constraint ? { grammar: constraint } : {}) };
  }

  /** The address texts of the settings with editors of their own beside the form's: the grammar
   *  and the watched tokens (left out when empty, as a fresh page has them). */
  editorTexts() {
    const texts = { grammar: this.grammar.text, watch: watchText(this.watchList.entriesList) };
    return Object.fromEntries(Object.entries(texts).filter(([, text]) => text !== ""));
  }

  /** What a saved preset keeps: the dials (not the prompt, the mode or the system message), the
   *  grammar, the drafting, the stage order and the logit bias. */
  presetOf(name) {
    const values = { ...this.form.values(), grammar: this.grammar.text };
    for (const key of ["prompt", "mode", "system"]) delete values[key];
    values.speculative = this.speculative.text();
    return { name, values, order: this.order.value, bias: this.bias.entriesList };
  }

  /** Puts a saved preset's settings back (presetOf's shape). */
  restorePreset(preset) {
    this.speculative.setText(preset.values.speculative ?? "");
    this.form.apply(preset.values);
    this.grammar.setText(preset.values.grammar ?? "");
    this.order.set(preset.order ?? []);
    this.bias.setEntries(preset.bias ?? []);
    revealEditors(preset.order, preset.bias);
  }

  /** Token ids chosen for another model's vocabulary leave with it: the logit bias and the watched
   *  tokens are cleared. Returns the note that says so (null: there were none). */
  dropTokenIds() {
    const dropped = [];
    if (this.bias.entriesList.length) {
      this.bias.setEntries([]);
      dropped.push("the logit bias");
    }
    if (this.watchList.ids.length) {
      this.watchList.clear();
      dropped.push("the watched tokens");
    }
    return dropped.length ? `Cleared ${dropped.join(" and ")}: token ids belong to one model's vocabulary.` : null;
  }

  /** The chat-only parts of the form (the system message, the turns) show in chat mode only. */
  syncChatOnly() {
    for (const node of document.querySelectorAll("[data-chat-only]")) node.hidden = this.form.mode !== "chat";
  }
}

/** A stage order or logit-bias entries in force open their (closed) editors. */
export function revealEditors(savedOrder, savedBias) {
  if (savedOrder?.length) document.querySelector("details[data-group=order]").open = true;
  if (savedBias?.length) document.querySelector("details[data-group=logit-bias]").open = true;
}
