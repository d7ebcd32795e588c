// The worker's batch slots (rows of the ONNX batch) as a row of boxes: the slots this page's lanes
// hold, by lane, from their `started` events; a lane that ended leaves its slot free for the next
// request. Slots held by other clients are not named by the server, so they show as free here; the
// step grid's band counts every client's rows.

import { el } from "../../shared/js/dom.js";

/** "freed by lane 2 after step 41": which lane left the slot, and after which of the worker's steps. */
export function freedText({ lane, after }) {
  return after === null ? `freed by lane ${lane}` : `freed by lane ${lane} after step ${after}`;
}

export class SlotsView {
  constructor(root) {
    this.root = root;
  }

  clear() {
    this.root.replaceChildren();
  }

  /** Draws `log` (a StepLog): one box per slot of the worker's batch. */
  render(log) {
    if (!log.maxBatch) {
      this.clear();
      return;
    }
    const held = log.heldSlots();
    const freed = new Map();
    for (const [lane, entry] of log.slots) if (entry.ended) for (const slot of entry.slots) if (!held.has(slot)) freed.set(slot, { lane, after: entry.freedAfter });
    const list = el("ol", { className: "slots", "aria-label": `Batch slots: ${held.size} of ${log.maxBatch} held by these lanes` });
    for (let slot = 0; slot < log.maxBatch; slot++) {
      const lane = held.get(slot);
      const item = el("li", { className: lane ? `slot held lane-${((lane - 1) % 8) + 1}` : "slot", "data-slot": slot });
      item.append(el("span", "slot-number", `slot ${slot}`));
      if (lane) item.append(el("span", "slot-lane", `lane ${lane}`));
      else if (freed.has(slot)) item.append(el("span", "slot-lane", freedText(freed.get(slot))));
      else item.append(el("span", "slot-lane", "free"));
      list.append(item);
    }
    this.root.replaceChildren(list);
  }
}
