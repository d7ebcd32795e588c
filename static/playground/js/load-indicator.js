// The inference workers' current load (GET /api/load, playground/edge/load.py): streams decoding, batch
// rows in use of the workers' total, and requests waiting, so a person knows why a run waits.
// Fetched once when the page opens, every few seconds while a run waits for its turn (never
// faster: the server keeps its answer for a second anyway) and once when the wait is over; each
// sentence says when it was true. Hidden while unavailable (no worker answered, or the workers do
// not report their load).

const POLL_MS = 2000;

/** The load as a sentence, or null when there is nothing to show. Pure. */
export function describeLoad(load, at = null) {
  if (!load?.available || !load.total) return null;
  const { running, rows, waiting, max_batch: maxBatch } = load.total;
  const workers = load.workers.filter((w) => w.load).length;
  const streams = `${running} ${running === 1 ? "stream" : "streams"} decoding`;
  const used = `${rows} of ${maxBatch} batch rows in use`;
  const line = `${waiting} waiting`;
  const across = workers > 1 ? ` across ${workers} workers` : "";
  const when = at ? ` at ${at.toLocaleTimeString()}` : "";
  return `Worker load${when}: ${streams} (${used}), ${line}${across}.`;
}

export class LoadIndicator {
  #timer = 0;
  #while = null;

  /** @param root  the element the sentence goes in (hidden when there is none) */
  constructor(root, url = "/api/load") {
    this.root = root;
    this.url = url;
  }

  /** Fetches the load once and shows it (or hides the indicator). */
  async refresh() {
    let load = null;
    try {
      const response = await fetch(this.url, { headers: { Accept: "application/json" }, cache: "no-store" });
      if (response.ok) load = await response.json();
    } catch {
      load = null; // the server is unreachable: nothing to say about its workers
    }
    this.show(load);
    return load;
  }

  show(load) {
    const text = describeLoad(load, new Date()); // a snapshot: its time says how fresh it is
    this.root.hidden = text === null;
    this.root.textContent = text ?? "";
    if (text !== null) this.root.dataset.waiting = String(load.total.waiting);
  }

  /** Polls every few seconds while `condition()` holds (a run waiting for its turn), and once
   *  more when it stops holding, so the sentence left on screen is not the waiting one. */
  watchWhile(condition) {
    this.#while = condition;
    if (this.#timer) return;
    const tick = async () => {
      this.#timer = 0;
      const waiting = Boolean(this.#while?.());
      await this.refresh();
      if (waiting) this.#timer = setTimeout(tick, POLL_MS);
    };
    tick();
  }
}
