// Presets: five built in (greedy, precise, balanced, creative, wild) and the user's own, named and
// kept in this browser (localStorage). A built-in preset sets the randomness and truncation dials
// (everything else, the seed included, stays); a user preset restores every setting but the
// prompt. The preset matching the current dials is marked with aria-pressed.

import { BUILTIN_PRESETS, PARAM_BY_KEY, PRESET_KEYS } from "./params-schema.js";

const STORAGE_KEY = "playground.presets.v1";

function readStored() {
  try {
    const list = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "[]");
    return Array.isArray(list) ? list.filter((p) => p && typeof p.name === "string" && p.values) : [];
  } catch {
    return [];
  }
}

/** The dial values a built-in preset sets: every preset key off, then the preset's own values. */
export function presetParams(preset) {
  const params = {};
  for (const key of PRESET_KEYS) params[key] = PARAM_BY_KEY[key].off;
  return { ...params, ...preset.values };
}

export class Presets extends EventTarget {
  /** @param root  the presets container (built here); @param announce  text → void */
  constructor(root, announce) {
    super();
    this.root = root;
    this.announce = announce;
    this.user = readStored();
    this.#build();
  }

  #build() {
    const builtins = document.createElement("div");
    builtins.className = "preset-buttons";
    builtins.setAttribute("role", "group");
    builtins.setAttribute("aria-label", "Built-in presets");
    for (const preset of BUILTIN_PRESETS) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "preset";
      button.dataset.preset = preset.name;
      button.setAttribute("aria-pressed", "false");
      const name = document.createElement("span");
      name.className = "preset-name";
      name.textContent = preset.name;
      const about = document.createElement("span");
      about.className = "preset-about";
      about.textContent = preset.about;
      button.append(name, about);
      button.addEventListener("click", () => this.#emit("apply", { params: presetParams(preset), name: preset.name }));
      builtins.append(button);
    }

    const mine = document.createElement("div");
    mine.className = "user-presets";
    const pickLabel = document.createElement("label");
    pickLabel.htmlFor = "user-preset";
    pickLabel.textContent = "Your presets";
    this.select = document.createElement("select");
    this.select.id = "user-preset";
    const load = button("Load", "load-preset");
    load.addEventListener("click", () => {
      const preset = this.user.find((p) => p.name === this.select.value);
      if (preset) this.#emit("restore", { preset });
    });
    const remove = button("Delete", "delete-preset");
    remove.addEventListener("click", () => {
      const name = this.select.value;
      if (!name) return;
      this.user = this.user.filter((p) => p.name !== name);
      this.#store();
      this.announce(`Preset “${name}” deleted.`);
    });
    const nameLabel = document.createElement("label");
    nameLabel.htmlFor = "preset-name";
    nameLabel.textContent = "Save current settings as";
    this.nameInput = document.createElement("input");
    this.nameInput.type = "text";
    this.nameInput.id = "preset-name";
    this.nameInput.maxLength = 40;
    this.nameInput.autocomplete = "off";
    const save = button("Save preset", "save-preset");
    save.addEventListener("click", () => this.#emit("save", { name: this.nameInput.value.trim() }));
    this.nameInput.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        save.click();
      }
    });
    const pickRow = document.createElement("div");
    pickRow.className = "inline-row";
    pickRow.append(this.select, load, remove);
    const saveRow = document.createElement("div");
    saveRow.className = "inline-row";
    saveRow.append(this.nameInput, save);
    mine.append(pickLabel, pickRow, nameLabel, saveRow);
    this.root.replaceChildren(builtins, mine);
    this.#fillSelect();
  }

  /** Keeps a user preset (replacing one of the same name). */
  save(preset) {
    this.user = [...this.user.filter((p) => p.name !== preset.name), preset];
    this.#store();
    this.select.value = preset.name;
    this.nameInput.value = "";
    this.announce(`Preset “${preset.name}” saved in this browser.`);
  }

  /** Marks the built-in preset whose dials equal `params` (typed values), if any. */
  markActive(params) {
    for (const b of this.root.querySelectorAll("button[data-preset]")) {
      const preset = BUILTIN_PRESETS.find((p) => p.name === b.dataset.preset);
      const wanted = presetParams(preset);
      const match = PRESET_KEYS.every((k) => (params[k] ?? PARAM_BY_KEY[k].off) === wanted[k]);
      b.setAttribute("aria-pressed", String(match));
    }
  }

  #store() {
    try {
      localStorage.setItem(STORAGE_KEY, JSON.stringify(this.user));
    } catch {
      this.announce("This browser would not keep the preset (storage is full or off).");
    }
    this.#fillSelect();
  }

  #fillSelect() {
    const current = this.select.value;
    this.select.replaceChildren();
    if (!this.user.length) {
      const none = document.createElement("option");
      none.value = "";
      none.textContent = "none saved yet";
      this.select.append(none);
    }
    for (const preset of this.user) {
      const option = document.createElement("option");
      option.value = preset.name;
      option.textContent = preset.name;
      this.select.append(option);
    }
    if (this.user.some((p) => p.name === current)) this.select.value = current;
  }

  #emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}

function button(text, action) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.dataset.action = action;
  return b;
}
