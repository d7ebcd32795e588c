// The inference workers' current load (GET /api/load, playground/edge/load.py): streams decoding, batch
// rows in use of the workers' total, and requests waiting, so a person knows why a run waits.
//
// The line is current or says how old it is. Fetched when the page opens, then every few seconds
// (never faster: the server keeps its answer for a second anyway) while the page watches (a run of
// its own is on) or the last answer showed work in progress; and afresh the moment the page's own
// run starts or ends (`runEvent`: `?fresh=1`, an answer whose ping went out after the event, so a
// finished run is never shown as still busy). Each sentence says when it was true: the answer's
// `age_ms` back from when it arrived. An answer older than the one on screen (a poll that crossed a
// fresh one) is not shown. Hidden while unavailable (no worker answered, or the workers do not
// report their load).

const POLL_MS = 2000;

/** The load as a sentence, or null when there is nothing to show; `at`: when it was true. Pure. */
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

/** When an answer was true, in this page's clock (ms): when it arrived less its `age_ms` (the time
 *  since the server's ping went out; an answer without it, from an older server: when it arrived). Pure. */
export function answerTime(load, arrivedAt) {
  return arrivedAt - (typeof load?.age_ms === "number" ? load.age_ms : 0);
}

/** The latest of the page's own run events ({type, at}, in order) that happened before `at`: what an
 *  answer true at `at` already knows of (null: none). Pure. */
export function knownEvent(events, at) {
  return latestKnown(events, at)?.type ?? null;
}

/** The last of `events` at or before `at` (null: none). */
function latestKnown(events, at) {
  let known = null;
  for (const event of events) if (event.at <= at) known = event;
  return known;
}

export class LoadIndicator {
  #polling = false;
  #while = null;
  #shownAt = -Infinity; // when the answer on screen was true
  #events = []; // the page's own run events: {type, at, seq}
  #seq = 0; // how many run events the page has had (each event's seq: which run's start or end a line knows of)

  /** @param root  the element the sentence goes in (hidden when there is none) */
  constructor(root, url = "/api/load") {
    this.root = root;
    this.url = url;
  }

  /** Fetches the load once (`fresh`: gathered after this call) and shows it unless an answer
   *  true later is already on screen (or hides the indicator). */
  async refresh({ fresh = false } = {}) {
    let load = null;
    try {
      const url = fresh ? `${this.url}?fresh=1` : this.url;
      const response = await fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" });
      if (response.ok) load = await response.json();
    } catch {
      load = null; // the server is unreachable: nothing to say about its workers
    }
    this.show(load, Date.now());
    return load;
  }

  /** The page's own run started, ended or failed (`type`: the event's): the line is asked afresh. */
  runEvent(type) {
    this.#seq += 1;
    this.#events.push({ type, at: Date.now(), seq: this.#seq });
    if (this.#events.length > 8) this.#events.shift();
    this.root.dataset.runEvents = String(this.#seq);
    delete this.root.dataset.after; // the line on screen predates this event
    delete this.root.dataset.afterSeq;
    return this.refresh({ fresh: true });
  }

  show(load, arrivedAt = Date.now()) {
    const at = answerTime(load, arrivedAt);
    if (load && at < this.#shownAt) return; // older than the line on screen
    const text = describeLoad(load, new Date(at)); // its time says how fresh it is
    this.root.hidden = text === null;
    this.root.textContent = text ?? "";
    if (text === null) return;
    this.#shownAt = at;
    this.root.dataset.waiting = String(load.total.waiting);
    this.root.dataset.at = String(Math.round(at));
    const known = latestKnown(this.#events, at);
    if (known) {
      this.root.dataset.after = known.type; // the line knows of the page's run having started / ended
      this.root.dataset.afterSeq = String(known.seq); // (which of the page's run events: a later run's are higher)
    } else {
      delete this.root.dataset.after;
      delete this.root.dataset.afterSeq;
    }
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
