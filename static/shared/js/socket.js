// The websocket client for /ws/generate/ (docs/websocket-api.md).
//
// One socket per page, opened on demand. Each `generate` gets a fresh request id; the server's
// events are routed back to the handler given for that id until its `done` or `error`. One-answer
// requests (`tokenize` → `tokens`, `inspect` → `inspection`) return a promise of that answer,
// rejected with the server's error (an Error carrying `code` and `param`). Events that
// name no running request (e.g. an error about a frame the server could not read) go to the
// `unrouted` listeners. The client knows nothing about the page.

import { parseJson, seedValue } from "./seeds.js";

/** ws:// or wss:// on this page's host, path /ws/generate/. */
export function socketUrl(loc = window.location) {
  const scheme = loc.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${loc.host}/ws/generate/`;
}

// Seeds stay exact both ways (seeds.js): events are read with `parseJson`, and `seedValue` is
// re-exported for the modules that send a seed.
export { seedValue };

/** Parses a server frame; any `seed` comes back as a decimal string. */
export function parseEvent(text) {
  return parseJson(text);
}

export class GenerateClient extends EventTarget {
  #url;
  #socket = null;
  #opening = null;
  #handlers = new Map(); // request id → function(event)
  #prefix = Math.random().toString(36).slice(2, 8);
  #counter = 0;

  constructor(url = socketUrl()) {
    super();
    this.#url = url;
  }

  get connected() {
    return this.#socket?.readyState === WebSocket.OPEN;
  }

  /** Opens the socket unless it is open; resolves once it is. */
  connect() {
    if (this.connected) return Promise.resolve();
    if (this.#opening) return this.#opening;
    this.#opening = new Promise((resolve, reject) => {
      const socket = new WebSocket(this.#url);
      socket.addEventListener("open", () => {
        this.#socket = socket;
        this.#opening = null;
        this.#emit("statechange", { connected: true });
        resolve();
      });
      socket.addEventListener("message", (message) => this.#receive(message.data));
      socket.addEventListener("close", () => {
        const wasOpen = this.#socket === socket;
        if (wasOpen) this.#socket = null;
        if (this.#opening) {
          this.#opening = null;
          reject(new Error("could not connect to the server"));
        }
        this.#failAll("the connection to the server closed");
        this.#emit("statechange", { connected: false });
      });
    });
    return this.#opening;
  }

  /** Sends a `generate` frame; `onEvent` receives this request's events. Returns the request id. */
  async generate(body, onEvent) {
    await this.connect();
    const requestId = `${this.#prefix}-${++this.#counter}`;
    this.#handlers.set(requestId, onEvent);
    this.#send({ type: "generate", request_id: requestId, ...body });
    return requestId;
  }

  /** Sends a one-answer frame (`tokenize`, `inspect`) and resolves with the server's answer. */
  async request(type, body) {
    await this.connect();
    const requestId = `${this.#prefix}-${type[0]}${++this.#counter}`;
    return new Promise((resolve, reject) => {
      this.#handlers.set(requestId, (event) => {
        this.#handlers.delete(requestId);
        if (event.type === "error") {
          const error = new Error(event.error?.message ?? "request failed");
          error.code = event.error?.code;
          error.param = event.error?.param ?? null;
          reject(error);
        } else {
          resolve(event);
        }
      });
      this.#send({ type, request_id: requestId, ...body });
    });
  }

  /** `tokenize`: the exact tokens for a text (mode "completion" | "chat" | "plain"). */
  tokenize(body) {
    return this.request("tokenize", body);
  }

  /** `inspect`: the distribution at a position under some parameter variants. */
  inspect(body) {
    return this.request("inspect", body);
  }

  /** Asks the server to stop a request; its `done` (reason "cancelled") still arrives. */
  cancel(requestId) {
    if (this.#handlers.has(requestId) && this.connected) {
      this.#send({ type: "cancel", request_id: requestId });
    }
  }

  #send(frame) {
    this.#socket.send(JSON.stringify(frame));
  }

  #receive(data) {
    let event;
    try {
      event = parseEvent(data);
    } catch {
      this.#emit("unrouted", { event: { type: "error", error: { code: "bad_frame", message: "the server sent a frame that is not JSON", param: null } } });
      return;
    }
    const handler = this.#handlers.get(event.request_id);
    if (!handler) {
      this.#emit("unrouted", { event });
      return;
    }
    if (event.type === "done" || event.type === "error") this.#handlers.delete(event.request_id);
    handler(event);
  }

  #failAll(message) {
    const handlers = [...this.#handlers];
    this.#handlers.clear();
    for (const [requestId, handler] of handlers) {
      handler({ type: "error", request_id: requestId, error: { code: "connection_lost", message, param: null } });
    }
  }

  #emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}
