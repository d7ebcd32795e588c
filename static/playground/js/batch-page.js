// The batch view (/batch): up to eight prompts, each with its own settings, sent at once on one
// websocket so the worker decodes them in one batch. Wiring only: the lanes' form
// (batch-lanes.js), one lane view per prompt (batch-lane-view.js, tokens as on the main page), the
// step log and its views (batch-steps.js, step-grid.js, batch-slots.js), the throughput
// (batch-throughput.js), the shared token inspector (inspector.js) and the workers' load
// (load-indicator.js). Every server event goes through one `receive`.

import { LaneForm } from "./batch-lanes.js";
import { errorText } from "./field-names.js";
import { LaneView } from "./batch-lane-view.js";
import { SlotsView } from "./batch-slots.js";
import { StepLog } from "./batch-steps.js";
import { Measure, ThroughputView } from "./batch-throughput.js";
import { renderLegend } from "../../shared/js/colors.js";
import { Inspector, InspectorController } from "../../shared/js/inspector.js";
import { LoadIndicator } from "./load-indicator.js";
import { Run } from "./run.js";
import { GenerateClient } from "../../shared/js/socket.js";
import { StepGrid } from "./step-grid.js";
import { rememberRun } from "../../shared/js/store.js";

const $ = (id) => document.getElementById(id);

const client = new GenerateClient();
const lanesRoot = $("lanes");
const lanes = new LaneForm($("lane-settings"), Number(lanesRoot.dataset.maxLanes));
const status = $("batch-status");
const stepCounter = $("step-counter");
const log = new StepLog();
const slots = new SlotsView($("slots"));
const throughput = new ThroughputView($("throughput"));
const together = new Measure();
const alone = new Measure();
const load = new LoadIndicator($("worker-load"));
const buttons = {
  together: document.querySelector("[data-action=run-together]"),
  alone: document.querySelector("[data-action=run-alone]"),
  stop: document.querySelector("[data-action=stop]"),
  add: document.querySelector("[data-action=add-lane]"),
  remove: document.querySelector("[data-action=remove-lane]"),
};

const views = []; // LaneView per lane shown, index = lane − 1
const runs = new Map(); // lane → its Run in the current measurement
let active = null; // {measure, pending: lanes not yet ended} while a measurement runs
let currentLane = null; // the lane whose token the inspector is about
let pinnedLane = null;

const inspector = new Inspector($("inspector"));
const controller = new InspectorController(inspector, lanesRoot, (i) => runs.get(currentLane)?.token(i) ?? null, (i) => {
  views[currentLane - 1]?.stream.markSelected(i);
});
const grid = new StepGrid($("step-grid"), $("step-grid-summary"), (lane, index) => {
  const el = views[lane - 1]?.stream.element(index);
  if (!el) return;
  choose(lane);
  controller.pin(index, el);
});

renderLegend($("legend"));
load.watchWhile(() => false); // the present load, followed while the workers are busy

/** The inspector's callbacks for lane n's tokens: they say which lane the index belongs to. */
function laneHandlers(n) {
  const base = controller.handlers;
  const wrapped = {};
  for (const [name, callback] of Object.entries(base)) {
    wrapped[name] = (...args) => {
      if (name === "leave") {
        const focused = document.activeElement?.closest?.(".lane[data-lane]");
        if (focused && lanesRoot.contains(focused)) currentLane = Number(focused.dataset.lane);
      } else if (name === "activate" || name === "focus") {
        choose(n);
      } else if (name === "enter" && pinnedLane === null) {
        currentLane = n;
      }
      return callback(...args);
    };
  }
  return wrapped;
}

/** Lane n's tokens are the inspector's now; a token pinned in another lane is let go. */
function choose(n) {
  if (pinnedLane !== null && pinnedLane !== n) controller.reset();
  currentLane = n;
  pinnedLane = n;
}

// The connection.
client.addEventListener("statechange", (e) => {
  const badge = $("connection");
  badge.dataset.connected = String(e.detail.connected);
  badge.textContent = e.detail.connected ? "Connected" : "Not connected";
});
client.addEventListener("unrouted", (e) => {
  if (e.detail.event.type === "error") say(`Error: ${errorText(e.detail.event.error?.message ?? "unknown", e.detail.event.error?.param)}`, "error");
});
client.connect().catch(() => {});

// Actions.
$("batch-form").addEventListener("submit", (e) => {
  e.preventDefault();
  runTogether();
});
buttons.alone.addEventListener("click", runAlone);
buttons.stop.addEventListener("click", stop);
buttons.add.addEventListener("click", () => {
  if (lanes.add()) syncLaneButtons();
  lanes.fieldsets().at(-1).querySelector("textarea").focus();
});
buttons.remove.addEventListener("click", () => {
  if (lanes.removeLast()) syncLaneButtons();
});
syncLaneButtons();

function syncLaneButtons() {
  buttons.add.disabled = active !== null || lanes.count >= lanes.maxLanes;
  buttons.remove.disabled = active !== null || lanes.count <= 1;
  $("lane-count").textContent = `${lanes.count} of at most ${lanes.maxLanes} lanes`;
}

function say(text, state) {
  status.textContent = text;
  status.dataset.state = state;
}

/** Reads every lane; shows what cannot be sent. Returns the bodies or null. */
function readLanes() {
  lanes.clearErrors();
  const read = lanes.read();
  let first = null;
  read.forEach((entry, i) => {
    if (entry.error) first ??= lanes.showError(i + 1, entry.error.param, entry.error.message);
  });
  if (first) {
    say("A lane's settings cannot be sent; see the message beside it.", "error");
    first.focus();
    return null;
  }
  return read.map((entry) => entry.body);
}

/** "Run together": every lane's generate at once, on this one socket. */
function runTogether() {
  const bodies = readLanes();
  if (bodies) launch(bodies, together, `Running ${bodies.length} lanes together…`);
}

/** "Run lane 1 alone": the same first lane with nothing beside it, for the throughput of one row. */
function runAlone() {
  const bodies = readLanes();
  if (bodies) launch(bodies.slice(0, 1), alone, "Running lane 1 alone…");
}

/** Shows one lane view per body (lanes beyond them are emptied) and sends every generate. */
async function launch(bodies, measure, message) {
  if (active) return;
  controller.reset();
  pinnedLane = currentLane = null;
  while (views.length > lanes.count) views.pop().remove();
  while (views.length < lanes.count) views.push(new LaneView(lanesRoot, views.length + 1, laneHandlers(views.length + 1)));
  for (const view of views) view.reset(lanes.describe(view.n));
  for (const view of views.slice(bodies.length)) view.idle("not in this run (lane 1 alone)");
  runs.clear();
  log.reset();
  grid.clear();
  slots.clear();
  stepCounter.textContent = "–";
  measure.start(bodies.length);
  active = { measure, pending: bodies.length };
  setRunning(true);
  say(message, "waiting");
  load.watchWhile(() => active !== null && [...runs.values()].some((run) => run.state === "waiting"));
  await Promise.all(bodies.map((body, i) => send(i + 1, body, measure)));
}

async function send(lane, body, measure) {
  const run = new Run(body);
  runs.set(lane, run);
  try {
    run.requestId = await client.generate(body, (event) => receive(lane, run, measure, event));
    if (run.stopRequested) client.cancel(run.requestId);
  } catch (error) {
    receive(lane, run, measure, { type: "error", error: { code: "connection", message: error.message, param: null } });
  }
}

function stop() {
  if (!active) return;
  say("Stopping…", "stopping");
  for (const run of runs.values()) {
    if (run.finished) continue;
    run.stopRequested = true;
    if (run.requestId) client.cancel(run.requestId);
  }
}

function setRunning(running) {
  lanes.setRunning(running);
  buttons.together.disabled = running;
  buttons.alone.disabled = running;
  buttons.stop.disabled = !running;
  lanesRoot.setAttribute("aria-busy", String(running));
  syncLaneButtons();
}

let frame = 0;
/** Redraws the step grid, slots, counter and throughput at most once per animation frame. */
function drawSoon() {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    draw();
  });
}

function draw() {
  grid.render(log, runs.size); // the lanes in this run (lane 1 alone: one)
  slots.render(log);
  throughput.render(together, alone);
  const anyTokens = [...runs.values()].some((run) => run.tokens.length > 0);
  if (log.reported) {
    const latest = log.steps.get(log.latest);
    stepCounter.textContent = `step ${log.latest}: ${latest.rows} rows, ${latest.requests} requests` +
      (log.maxBatch ? ` (batch size ${log.maxBatch})` : "") + `; ${log.columns().length} steps with these lanes`;
  } else if (anyTokens) {
    stepCounter.textContent = "This worker does not report its decode steps: it decodes one request at a time, so the lanes take turns.";
    grid.clear("No steps reported: the lanes ran one after another.");
  }
}

/** Every server event of a lane's run goes through here. */
function receive(lane, run, measure, event) {
  run.apply(event);
  if (event.run_id) remember(event);
  const view = views[lane - 1];
  switch (event.type) {
    case "queued":
      view.queued(event);
      break;
    case "loading":
      view.loading(event);
      break;
    case "started":
      view.started(event);
      measure.started();
      log.started(lane, event);
      if (active?.measure === measure && status.dataset.state === "waiting") say("Decoding…", "streaming");
      drawSoon();
      break;
    case "token":
      measure.token();
      view.token(event, run.tokens.length);
      log.token(lane, event);
      drawSoon();
      break;
    case "done":
      view.done(event);
      log.ended(lane);
      ended();
      break;
    case "error":
      view.failed(event.error);
      if (event.error.param) lanes.showError(lane, event.error.param, event.error.message);
      log.ended(lane);
      ended();
      break;
    default:
      break;
  }
}

function ended() {
  if (!active) return;
  active.pending -= 1;
  drawSoon();
  if (active.pending > 0) return;
  const failed = [...runs.values()].filter((run) => run.error).length;
  active = null;
  setRunning(false);
  const which = runs.size === 1 ? "Lane 1 alone" : `All ${runs.size} lanes`;
  say(failed ? `Ended; ${failed} of ${runs.size} lanes failed.` : `${which} ended.`, failed ? "error" : "done");
}

function remember(event) {
  try {
    rememberRun(event.run_id, event.delete_token ?? null);
  } catch {
    // localStorage unavailable or full: the run is still saved on the server.
  }
}
