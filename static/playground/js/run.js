// One generation run as the page knows it: the request sent and the server's events, in order.
//
// Views read from a Run; they never keep their own copy of the numbers. A branch is a Run too:
// its request carries `prefix_tokens` (the parent's ids up to the fork, then the chosen
// alternative; an edit: the kept ids, then the person's typed text), and the branch tree
// (branches.js) keeps the links between runs.

export class Run {
  constructor(request) {
    this.request = request;
    this.requestId = null;
    this.started = null; // the `started` event
    this.tokens = []; // sample 0's `token` events, by index
    this.samples = [this.tokens]; // every sample's `token` events (params.n > 1)
    this.beamSteps = []; // `beam_step` events (params.num_beams > 1)
    this.verifications = []; // `verification` events (params.speculative), in order
    this.done = null; // the `done` event
    this.error = null; // the `error` object of an `error` event
    this.stopRequested = false;
    // A step's request asks for one token; the whole text's {max, min} length the form asked for
    // is kept here, so a branch from a stepped run keeps it. Null: read it from the request.
    this.wanted = null;
  }

  /** "waiting" → "streaming" → "done" | "failed". */
  get state() {
    if (this.error) return "failed";
    if (this.done) return "done";
    return this.started ? "streaming" : "waiting";
  }

  get finished() {
    return this.state === "done" || this.state === "failed";
  }

  /** Records a server event for this run. */
  apply(event) {
    switch (event.type) {
      case "started":
        this.started = event;
        break;
      case "token": {
        const sample = event.sample ?? 0;
        this.samples[sample] ??= [];
        this.samples[sample][event.index] = event; // its `origin` says how it got there (typed, branch, …)
        break;
      }
      case "beam_step":
        this.beamSteps[event.index] = event;
        break;
      case "verification":
        this.verifications.push(event);
        break;
      case "done":
        this.done = event;
        break;
      case "error":
        this.error = event.error;
        break;
      default:
        break;
    }
  }

  token(index) {
    return this.tokens[index] ?? null;
  }

  /** Sample 0's chosen ids, in order (what a branch or a step forces as its prefix). */
  ids(upTo = this.tokens.length) {
    return this.tokens.slice(0, upTo).map((t) => t.id);
  }

  /** The model's log-probability of sample 0's tokens: Σ ln raw_prob. */
  get logprob() {
    let sum = 0;
    for (const t of this.tokens) sum += Math.log(Math.max(t.raw_prob, Number.MIN_VALUE));
    return sum;
  }

  get isBeam() {
    return (this.request.params?.num_beams ?? 1) > 1;
  }

  get sampleCount() {
    return this.samples.filter(Boolean).length;
  }
}
