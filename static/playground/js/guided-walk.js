// The guided walk of the loop on the person's own run: a small panel that tells one step at a time
// (walk-steps.js) and points at the part of the page that shows it (highlighted, scrolled into
// view). Next / Back buttons (and → / ←), Escape or Close ends it; text via textContent only.
// The panel keeps the token's alternatives open while it is used (`data-keeps-inspector`): a click
// or tap on Next must not close what the next step points at.

import { walkSteps } from "./walk-steps.js";

export class GuidedWalk {
  /** @param root  the panel (#walk): [data-walk-title], [data-walk-text], [data-walk-count] and
   *  buttons [data-action=walk-back|walk-next|walk-close]; @param targets  key → element | null */
  constructor(root, targets) {
    this.root = root;
    this.targets = targets;
    this.steps = [];
    this.at = 0;
    this.marked = null;
    this.back = root.querySelector("[data-action=walk-back]");
    this.next = root.querySelector("[data-action=walk-next]");
    this.back.addEventListener("click", () => this.go(this.at - 1));
    this.next.addEventListener("click", () => (this.at === this.steps.length - 1 ? this.close() : this.go(this.at + 1)));
    root.querySelector("[data-action=walk-close]").addEventListener("click", () => this.close());
    root.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        e.preventDefault();
        this.close();
      } else if (e.key === "ArrowRight" && this.at < this.steps.length - 1) {
        e.preventDefault();
        this.go(this.at + 1);
      } else if (e.key === "ArrowLeft" && this.at > 0) {
        e.preventDefault();
        this.go(this.at - 1);
      }
    });
  }

  get open() {
    return !this.root.hidden;
  }

  /** Starts the walk on token event `token` of a run that ran with `params`. */
  start(token, params, returnFocus) {
    this.steps = walkSteps(token, params);
    this.returnFocus = returnFocus;
    this.root.dataset.index = String(token.index);
    this.root.hidden = false;
    this.go(0);
  }

  go(index) {
    if (index < 0 || index >= this.steps.length) return;
    this.at = index;
    const step = this.steps[index];
    this.root.dataset.step = step.key;
    this.root.querySelector("[data-walk-title]").textContent = step.title;
    this.root.querySelector("[data-walk-text]").textContent = step.text;
    this.root.querySelector("[data-walk-count]").textContent = `Step ${index + 1} of ${this.steps.length}`;
    this.back.disabled = index === 0;
    this.next.textContent = index === this.steps.length - 1 ? "Done" : "Next";
    this.#mark(visible(this.targets(step.target)) ?? visible(this.targets("token")));
    this.next.focus({ preventScroll: true });
  }

  close() {
    if (!this.open) return;
    this.root.hidden = true;
    this.#mark(null);
    this.returnFocus?.focus({ preventScroll: true });
  }

  #mark(target) {
    // (a step never points at nothing on screen: a closed group of settings opens, and a part
    // that is not shown falls back to the token itself; `visible` above)
    this.marked?.classList.remove("walk-target");
    this.marked = target ?? null;
    if (!target) return;
    target.classList.add("walk-target");
    target.scrollIntoView({ block: "center", behavior: "instant" });
  }
}

/** `target` when it has a box on screen (a closed <details> around it is opened first), else null. */
function visible(target) {
  if (!target) return null;
  const closed = target.closest("details:not([open])");
  if (closed) closed.open = true;
  const box = target.getBoundingClientRect();
  return box.width > 0 && box.height > 0 ? target : null;
}
