// One generation run as the page knows it: the request sent and the server's events, in order.
//
// Views read from a Run; they never keep their own copy of the numbers. (A later page keeps many
// runs — branches — and this is the unit it will keep.)

export class Run {
  constructor(request) {
    this.request = request;
    this.requestId = null;
    this.started = null; // the `started` event
    this.tokens = []; // `token` events, by index
    this.done = null; // the `done` event
    this.error = null; // the `error` object of an `error` event
    this.stopRequested = false;
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
      case "token":
        this.tokens[event.index] = event;
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
}
