// Wiring: the form sends a request over the socket; the run's events feed the views.

import { renderLegend } from "./colors.js";
import { ParamsForm } from "./controls.js";
import { Inspector, InspectorController } from "./inspector.js";
import { clearPromptTokens, renderPromptTokens } from "./prompt-tokens.js";
import { Run } from "./run.js";
import { GenerateClient } from "./socket.js";
import { RunStats } from "./stats.js";
import { TokenStream } from "./stream.js";

const $ = (id) => document.getElementById(id);

const client = new GenerateClient();
const form = new ParamsForm($("controls"));
const stats = new RunStats($("stats"), $("status"));
const output = $("output");
const promptList = $("prompt-tokens");
const promptCount = $("prompt-token-count");
const reuseSeed = document.querySelector("[data-action=reuse-seed]");

let run = null; // the run on screen

const controller = new InspectorController(new Inspector($("inspector")), output, (i) => run?.token(i));
const stream = new TokenStream(output, controller.handlers);

renderLegend($("legend"));
clearPromptTokens(promptList, promptCount);

client.addEventListener("statechange", (e) => {
  const badge = $("connection");
  badge.dataset.connected = String(e.detail.connected);
  badge.textContent = e.detail.connected ? "Connected" : "Not connected";
});
client.addEventListener("unrouted", (e) => {
  const { event } = e.detail;
  if (event.type === "error") {
    form.showError(event.error.param, event.error.message);
    stats.failed(event.error.message);
  }
});
client.connect().catch(() => {}); // early, so the first Generate does not wait; retried on Generate

form.form.addEventListener("submit", (e) => {
  e.preventDefault();
  start();
});
$("prompt").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    form.form.requestSubmit();
  }
});
form.stopButton.addEventListener("click", stop);
reuseSeed.addEventListener("click", () => {
  if (run?.started) form.setSeed(run.started.seed);
});

async function start() {
  if (run && !run.finished) return;
  form.clearErrors();
  const read = form.read();
  if (read.errors) {
    let target = null;
    for (const { param, message } of read.errors) target ??= form.showError(param, message);
    stats.failed(read.errors[0].message);
    target?.focus();
    return;
  }
  const current = new Run(read.request);
  run = current;
  controller.reset();
  stream.clear();
  clearPromptTokens(promptList, promptCount);
  reuseSeed.hidden = true;
  stats.waiting();
  form.setRunning(true);
  output.setAttribute("aria-busy", "true");
  try {
    current.requestId = await client.generate(read.request, (event) => receive(current, event));
    if (current.stopRequested) client.cancel(current.requestId);
  } catch (error) {
    receive(current, { type: "error", error: { code: "connection", message: error.message, param: null } });
  }
}

function stop() {
  if (!run || run.finished) return;
  run.stopRequested = true;
  stats.status("Stopping…", "stopping");
  if (run.requestId) client.cancel(run.requestId);
}

function receive(current, event) {
  current.apply(event);
  if (current !== run) return; // a run no longer on screen
  switch (event.type) {
    case "started":
      renderPromptTokens(promptList, promptCount, event.prompt_tokens, event.model?.context_window);
      stats.started(event, current.request.params.seed);
      reuseSeed.hidden = false;
      break;
    case "token":
      stream.append(event);
      stats.progress(event.index + 1);
      break;
    case "done":
      stream.appendTail(event.tail);
      stats.done(event);
      finish();
      break;
    case "error": {
      const target = form.showError(event.error.param, event.error.message);
      stats.failed(event.error.message);
      finish();
      if (event.error.param) target?.focus();
      break;
    }
    default:
      break;
  }
}

function finish() {
  form.setRunning(false);
  output.setAttribute("aria-busy", "false");
}
