// Which lanes were in which decode step, from the `batch` field of their token events
// (docs/websocket-api.md): `{step, rows, requests}` — the worker's step counter (one integer per
// worker process, shared by every request decoded in that step), the rows of the ONNX batch in it
// and the requests in it. Rows and requests count every client's work, not only this page's.
// A lane's slots come from its `started` event (`batch: {slots, max_batch}`) and are freed when it
// ends. Pure data: no DOM. Events without the field (a worker that decodes one request at a time)
// leave the log empty, and `reported` stays false.

export class StepLog {
  constructor() {
    this.reset();
  }

  reset() {
    this.steps = new Map(); // step → {rows, requests, lanes: Set of lane numbers}
    this.laneSteps = new Map(); // lane → its steps in order
    this.slots = new Map(); // lane → {slots: [..], freedAfter: its last step once ended | null, ended: bool}
    this.maxBatch = null;
    this.latest = null; // the newest step seen
  }

  /** True once any token event carried a `batch` field. */
  get reported() {
    return this.steps.size > 0;
  }

  /** A lane's `started` event. */
  started(lane, event) {
    const batch = event.batch;
    if (!batch || !Array.isArray(batch.slots)) return;
    this.slots.set(lane, { slots: batch.slots, freedAfter: null, ended: false });
    if (Number.isInteger(batch.max_batch)) this.maxBatch = Math.max(this.maxBatch ?? 0, batch.max_batch);
  }

  /** A lane's `token` event. */
  token(lane, event) {
    const batch = event.batch;
    if (!batch || !Number.isInteger(batch.step)) return;
    let step = this.steps.get(batch.step);
    if (!step) {
      step = { rows: batch.rows, requests: batch.requests, lanes: new Set() };
      this.steps.set(batch.step, step);
    }
    step.rows = Math.max(step.rows ?? 0, batch.rows ?? 0);
    step.requests = Math.max(step.requests ?? 0, batch.requests ?? 0);
    step.lanes.add(lane);
    const mine = this.laneSteps.get(lane) ?? [];
    if (mine.at(-1) !== batch.step) mine.push(batch.step);
    this.laneSteps.set(lane, mine);
    this.latest = Math.max(this.latest ?? batch.step, batch.step);
  }

  /** A lane ended (done, error): its slots are free again after its last step. */
  ended(lane) {
    const held = this.slots.get(lane);
    if (!held) return;
    held.ended = true;
    held.freedAfter = this.laneSteps.get(lane)?.at(-1) ?? null;
  }

  /** The steps that had at least one of this page's lanes, oldest first. */
  columns() {
    return [...this.steps.keys()].sort((a, b) => a - b);
  }

  /** The most rows any seen step had. */
  get peakRows() {
    let peak = 0;
    for (const step of this.steps.values()) peak = Math.max(peak, step.rows ?? 0);
    return peak;
  }

  /** The lane holding each slot now (slot → lane), for the slots still held. */
  heldSlots() {
    const held = new Map();
    for (const [lane, entry] of this.slots) if (!entry.ended) for (const slot of entry.slots) held.set(slot, lane);
    return held;
  }
}
