// The inference workers' current load (GET /api/load, playground/edge/load.py): streams decoding, batch
// rows in use of the workers' total, and requests waiting, so a person knows why a run waits.
// Fetched when the page opens, then every few seconds (never faster: the server keeps its answer
// for a second anyway) while the page watches (a run of its own is on) or the last answer showed
// work in progress, so the sentence left on screen is the present one: polling stops only once
// the workers are idle, which stays true until someone sends a run. Each sentence says when it was
// true. Hidden while unavailable (no worker answered, or the workers do not report their load).

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

/** Whether a load shows work in progress: a stream decoding or a request waiting. Pure. */
export function isBusy(load) {
  return Boolean(load?.available && load.total && (load.total.running > 0 || load.total.waiting > 0));
}

export class LoadIndicator {
  #polling = false;
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

  /** Polls every few seconds while `condition()` holds (a run of the page's own is on) and, after
   *  that, until an answer shows the workers idle: the sentence left on screen is never a busy
   *  one that has since ended. `watchWhile(() => false)` shows the present once and follows it
   *  while busy. */
  watchWhile(condition) {
    this.#while = condition;
    if (this.#polling) return;
    this.#polling = true;
    const tick = async () => {
      const watching = Boolean(this.#while?.());
      const load = await this.refresh();
      this.#polling = watching || Boolean(this.#while?.()) || isBusy(load); // a run may have started meanwhile
      if (this.#polling) setTimeout(tick, POLL_MS);
    };
    tick();
  }
}
