// Settings ↔ address: the page's settings are restored from its query string when it loads and
// written back (debounced, replacing the history entry) on every change, in the format of
// static/shared/js/address.js (the saved runs' "Open in the playground" links write the same).

import { ParamsForm } from "./controls.js";
import { SCHEMA } from "./params-schema.js";
import { settingsFromAddress, settingsToAddress, watchValue } from "../../shared/js/address.js";
import { revealEditors } from "./page-settings.js";

const WRITE_DELAY_MS = 150; // typing in a field writes the address once it pauses

export class SettingsAddress {
  /** @param settings  PageSettings: the form and its editors */
  constructor(settings) {
    this.settings = settings;
    this.timer = 0;
  }

  /** The settings the address holds, put into the form and its editors (a fresh address: none). */
  restore(search = location.search) {
    const { form, grammar, watchList, speculative, modelPicker, chatTurns, order, bias } = this.settings;
    const { values: { grammar: grammarText = "", watch = "", ...values }, order: savedOrder, bias: savedBias, turns, prefix } =
      settingsFromAddress(SCHEMA, search);
    if (turns.length || prefix) chatTurns.set(turns, prefix); // before the form's settingschange reads them
    grammar.setText(grammarText);
    watchList.setEntries(watchValue(watch));
    if ("speculative" in values) speculative.setText(values.speculative);
    if (values.model) modelPicker.set(values.model); // chosen when the list of models arrives
    if (Object.keys(values).length) form.apply(values);
    if (savedOrder) order.set(savedOrder);
    if (savedBias.length) bias.setEntries(savedBias);
    revealEditors(savedOrder, savedBias);
    this.settings.syncChatOnly();
  }

  /** Writes the settings into the address once changes pause; settings at their defaults are left out. */
  schedule() {
    const { form, speculative, modelPicker, chatTurns, order, bias } = this.settings;
    const values = { ...form.values(), speculative: speculative.text(), model: modelPicker.value };
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const query = settingsToAddress(
        SCHEMA,
        { ...values, ...this.settings.editorTexts() },
        { ...ParamsForm.initialValues(), speculative: "", model: modelPicker.defaultId ?? "" },
        { order: order.value, bias: bias.entriesList, turns: chatTurns.turns, prefix: chatTurns.prefix.value },
      );
      history.replaceState(null, "", query ? `?${query}` : location.pathname);
    }, WRITE_DELAY_MS);
  }
}
