// The order of the sampler chain's stages: a list reorderable by drag and by keyboard.
//
// Keyboard: each stage is a focusable list item; ↑/↓ move focus, Alt+↑/Alt+↓ (or the item's
// "up"/"down" buttons) move the stage, and a live region says where it went. Drag and drop uses
// the native draggable API. Stages the current settings switch on are marked "on" in text. Each
// stage shows its human name and its identifier: "Nucleus (top-p) · top_p".

import { stageLabel } from "./param-labels.js";
import { DEFAULT_ORDER } from "./params-schema.js";

export class StageOrder extends EventTarget {
  #order = [...DEFAULT_ORDER];

  /** @param list  an <ol>; @param announcer  an aria-live element for moves */
  constructor(list, announcer) {
    super();
    this.list = list;
    this.announcer = announcer;
    this.dragged = null;
    list.addEventListener("keydown", (e) => this.#key(e));
    list.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-move]");
      if (!button) return;
      const item = button.closest("li");
      this.move(item.dataset.stage, button.dataset.move === "up" ? -1 : 1, button);
    });
    list.addEventListener("dragstart", (e) => {
      const item = e.target.closest("li[data-stage]");
      if (!item) return;
      this.dragged = item.dataset.stage;
      item.classList.add("dragging");
      e.dataTransfer.effectAllowed = "move";
      e.dataTransfer.setData("text/plain", this.dragged);
    });
    list.addEventListener("dragover", (e) => {
      if (!this.dragged) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "move";
    });
    list.addEventListener("drop", (e) => {
      const target = e.target.closest("li[data-stage]");
      const name = this.dragged ?? e.dataTransfer.getData("text/plain");
      this.dragged = null;
      if (!target || !name || target.dataset.stage === name) return;
      e.preventDefault();
      const box = target.getBoundingClientRect();
      const after = e.clientY > box.top + box.height / 2;
      const order = this.#order.filter((s) => s !== name);
      let at = order.indexOf(target.dataset.stage) + (after ? 1 : 0);
      order.splice(at, 0, name);
      this.set(order);
      this.#announce(name);
    });
    list.addEventListener("dragend", () => {
      this.dragged = null;
      for (const item of list.querySelectorAll(".dragging")) item.classList.remove("dragging");
    });
    this.#render();
  }

  get order() {
    return [...this.#order];
  }

  /** The order to send: null when it is the default (the server's own). */
  get value() {
    return this.isDefault ? null : this.order;
  }

  get isDefault() {
    return this.#order.every((s, i) => s === DEFAULT_ORDER[i]);
  }

  /** Sets the order; unknown names are dropped and missing ones appended in default order. */
  set(order) {
    const known = order.filter((s, i) => DEFAULT_ORDER.includes(s) && order.indexOf(s) === i);
    this.#order = [...known, ...DEFAULT_ORDER.filter((s) => !known.includes(s))];
    this.#render();
    this.dispatchEvent(new Event("change"));
  }

  reset() {
    this.set(DEFAULT_ORDER);
    this.announcer.textContent = "Default order restored.";
  }

  /** Marks the stages the settings switch on. */
  markEnabled(enabled) {
    this.enabled = enabled;
    for (const item of this.list.children) {
      const on = enabled.has(item.dataset.stage);
      item.classList.toggle("on", on);
      item.querySelector(".stage-state").textContent = on ? "on" : "off";
    }
  }

  move(name, delta, focusFrom) {
    const from = this.#order.indexOf(name);
    const to = from + delta;
    if (from < 0 || to < 0 || to >= this.#order.length) return;
    const order = [...this.#order];
    order.splice(from, 1);
    order.splice(to, 0, name);
    const refocus = focusFrom?.dataset?.move ?? "item";
    this.set(order);
    const item = this.list.querySelector(`li[data-stage="${name}"]`);
    const target = refocus === "item" ? item : item.querySelector(`button[data-move="${refocus}"]`);
    (target && !target.disabled ? target : item).focus();
    this.#announce(name);
  }

  #announce(name) {
    const at = this.#order.indexOf(name) + 1;
    this.announcer.textContent = `${name} moved to position ${at} of ${this.#order.length}.`;
  }

  #key(e) {
    const item = e.target.closest("li[data-stage]");
    if (!item || e.target !== item) return;
    const name = item.dataset.stage;
    if (e.altKey && (e.key === "ArrowUp" || e.key === "ArrowDown")) {
      e.preventDefault();
      this.move(name, e.key === "ArrowUp" ? -1 : 1);
    } else if (e.key === "ArrowUp" || e.key === "ArrowDown") {
      e.preventDefault();
      const next = e.key === "ArrowUp" ? item.previousElementSibling : item.nextElementSibling;
      next?.focus();
    }
  }

  #render() {
    const enabled = this.enabled ?? new Set();
    this.list.replaceChildren();
    this.#order.forEach((name, i) => {
      const item = document.createElement("li");
      item.dataset.stage = name;
      item.draggable = true;
      item.tabIndex = 0;
      item.setAttribute("aria-label", `${i + 1}. ${stageLabel(name)}, ${name}`);
      item.setAttribute("aria-describedby", "stage-order-hint");
      item.classList.toggle("on", enabled.has(name));
      const grip = document.createElement("span");
      grip.className = "grip";
      grip.setAttribute("aria-hidden", "true");
      grip.textContent = "⠿";
      const label = document.createElement("span");
      label.className = "stage-name";
      const id = document.createElement("code");
      id.textContent = name;
      const words = stageLabel(name);
      label.append(...(words === name ? [] : [`${words} · `]), id);
      const state = document.createElement("span");
      state.className = "stage-state";
      state.textContent = enabled.has(name) ? "on" : "off";
      const up = moveButton("up", name, i === 0);
      const down = moveButton("down", name, i === this.#order.length - 1);
      item.append(grip, label, state, up, down);
      this.list.append(item);
    });
  }
}

function moveButton(direction, name, disabled) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "move";
  button.dataset.move = direction;
  button.disabled = disabled;
  button.tabIndex = -1; // the item is the tab stop; Alt+arrows move it
  button.textContent = direction === "up" ? "↑" : "↓";
  button.setAttribute("aria-label", `Move ${stageLabel(name)} ${direction}`);
  return button;
}
