// Wiring: the form sends a request over the socket; the run's events feed the views. Runs form a
// tree (branches.js): Generate starts a new tree, Branch / "continue from here" add children,
// Step replaces the current node's run with one token more.

import { BeamView } from "./beam-view.js";
import { BranchTree, BranchTreeView } from "./branches.js";
import { renderLegend } from "./colors.js";
import { ParamsForm } from "./controls.js";
import { Inspector, InspectorController } from "./inspector.js";
import { LatencyChart } from "./latency-chart.js";
import { LogitBiasEditor } from "./logit-bias.js";
import { settingsFromAddress, settingsToAddress } from "./address.js";
import { DEFAULTS, SCHEMA, enabledStages } from "./params-schema.js";
import { Presets } from "./presets.js";
import { clearPromptTokens, LivePromptTokens } from "./prompt-tokens.js";
import { Run } from "./run.js";
import { SamplesView } from "./samples-view.js";
import { GenerateClient } from "./socket.js";
import { StageOrder } from "./stage-order.js";
import { RunStats } from "./stats.js";
import { wireSeed } from "./step-context.js";
import { StripChart } from "./strip-chart.js";
import { TokenStream } from "./stream.js";
import { TemperatureExplorer } from "./temperature-explorer.js";
import { WhatIf } from "./what-if.js";
import { rememberRun } from "../../runs/js/store.js";

const $ = (id) => document.getElementById(id);

const client = new GenerateClient();
const form = new ParamsForm($("controls"));
const stats = new RunStats($("stats"), $("status"));
const output = $("output");
const reuseSeed = document.querySelector("[data-action=reuse-seed]");
const stepButton = document.querySelector("[data-action=step]");
const tokenize = (body) => client.tokenize(body);
const inspect = (body) => client.inspect(body);

const tree = new BranchTree();
let active = null; // the run streaming now, if any
const shown = () => tree.current?.run ?? null; // the run on screen

const order = new StageOrder($("stage-order"), document.querySelector("[data-order-announcer]"));
const bias = new LogitBiasEditor($("logit-bias-editor"), tokenize);
const presets = new Presets($("presets"), (text) => stats.status(text, "idle"));
// The system message is chat mode's only: the server refuses it with any other mode.
const promptTokens = new LivePromptTokens($("prompt-tokens"), $("prompt-token-count"), () => ({
  text: form.control("prompt").value, mode: form.mode, system: form.mode === "chat" ? form.control("system").value : "",
}), tokenize);

const inspector = new Inspector($("inspector"), { onBranch: branchFrom });
const controller = new InspectorController(inspector, output, (i) => shown()?.token(i), selectStep);
const stream = new TokenStream(output, controller.handlers);
const strip = new StripChart($("strip-chart"), (index) => {
  const el = stream.element(index);
  if (el) controller.pin(index, el);
});
const whatIf = new WhatIf($("what-if"), inspect, continueWith);
const explorer = new TemperatureExplorer($("temperature-explorer"), inspect);
const samplesView = new SamplesView($("samples"));
const beamView = new BeamView($("beam-tree"), $("beam-hypotheses"));
const latency = new LatencyChart($("latency-chart"), $("latency-summary"));
new BranchTreeView($("branches"), tree, (node) => {
  if (!node || node === tree.current) return;
  tree.select(node);
  showRun(node);
});

renderLegend($("legend"));
clearPromptTokens($("prompt-tokens"), $("prompt-token-count"));

// Settings: restored from the address, written back on every change.
restoreFromUrl();
let urlTimer = 0;
function settingsChanged() {
  syncChatOnly();
  const values = form.values();
  const params = typedParams();
  order.markEnabled(enabledStages(params, order.order));
  presets.markActive(params);
  clearTimeout(urlTimer);
  urlTimer = setTimeout(() => {
    const query = settingsToAddress(SCHEMA, values, ParamsForm.initialValues(), { order: order.value, bias: bias.entriesList });
    history.replaceState(null, "", query ? `?${query}` : location.pathname);
  }, 150);
}
form.form.addEventListener("input", (e) => {
  settingsChanged();
  if (e.target.id === "prompt" || e.target.id === "system") promptTokens.schedule();
});
form.form.addEventListener("change", (e) => {
  settingsChanged();
  if (e.target.name === "mode") promptTokens.schedule();
});
form.form.addEventListener("settingschange", () => {
  settingsChanged();
  promptTokens.schedule();
});
order.addEventListener("change", settingsChanged);
bias.addEventListener("change", settingsChanged);
document.querySelector("[data-action=reset-order]").addEventListener("click", () => order.reset());
settingsChanged();
if (form.control("prompt").value) promptTokens.schedule();

function restoreFromUrl() {
  const { values, order: savedOrder, bias: savedBias } = settingsFromAddress(SCHEMA, location.search);
  if (Object.keys(values).length) form.apply(values);
  if (savedOrder) order.set(savedOrder);
  if (savedBias.length) bias.setEntries(savedBias);
  syncChatOnly();
}

function syncChatOnly() {
  for (const node of document.querySelectorAll("[data-chat-only]")) node.hidden = form.mode !== "chat";
}

/** The form's params as typed values (what the stage list and the presets compare). */
function typedParams() {
  const read = form.read({ logit_bias: bias.value });
  return read.request?.params ?? {};
}

// Presets.
presets.addEventListener("apply", (e) => {
  form.applyParams(e.detail.params);
  stats.status(`Preset ${e.detail.name} applied.`, "idle");
});
presets.addEventListener("save", (e) => {
  const { name } = e.detail;
  if (!name) {
    stats.status("Give the preset a name first.", "idle");
    $("preset-name").focus();
    return;
  }
  const values = form.values();
  for (const key of ["prompt", "mode", "system"]) delete values[key];
  presets.save({ name, values, order: order.value, bias: bias.entriesList });
});
presets.addEventListener("restore", (e) => {
  const { preset } = e.detail;
  form.apply(preset.values);
  order.set(preset.order ?? []);
  bias.setEntries(preset.bias ?? []);
  stats.status(`Preset “${preset.name}” loaded.`, "idle");
});

// The connection.
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

// Actions.
form.form.addEventListener("submit", (e) => {
  e.preventDefault();
  generate();
});
$("prompt").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    form.form.requestSubmit();
  }
});
form.stopButton.addEventListener("click", stop);
stepButton.addEventListener("click", step);
document.addEventListener("keydown", (e) => {
  if (e.altKey && !e.ctrlKey && !e.metaKey && (e.key === "n" || e.key === "N" || e.code === "KeyN")) {
    e.preventDefault();
    step();
  }
});
reuseSeed.addEventListener("click", () => {
  const run = shown();
  if (run?.started) form.setSeed(run.started.seed);
});
$("show-whitespace").addEventListener("change", (e) => output.classList.toggle("show-whitespace", e.target.checked));

/** Reads the form; shows what cannot be sent. Returns the request or null. */
function readForm() {
  form.clearErrors();
  const read = form.read({ logit_bias: bias.value, sampler_order: order.value });
  if (read.errors) {
    let target = null;
    for (const { param, message } of read.errors) target ??= form.showError(param, message);
    stats.failed(read.errors[0].message);
    target?.focus();
    return null;
  }
  return read.request;
}

/** Generate: a new tree with this run as its root. */
function generate() {
  if (active) return;
  const request = readForm();
  if (!request) return;
  const run = new Run(request);
  const node = tree.reset(run);
  launch(run, node);
}

/** Step: one token more on the run on screen (or a one-token run when there is none to extend). */
function step() {
  if (active) return;
  const request = readForm();
  if (!request) return;
  const current = shown();
  const extendable = current && current.finished && !current.error && !current.isBeam &&
    current.request.prompt === request.prompt && current.request.mode === request.mode &&
    current.tokens.length > 0 && current.done?.reason !== "eos";
  if (current?.done?.reason === "eos" && current.request.prompt === request.prompt) {
    stats.status("The model already ended this text (end of sequence); Generate starts again.", "done");
    return;
  }
  // The form's lengths are for the whole text; a step is one token after `prefix` tokens.
  const wanted = { max: request.params.max_tokens ?? DEFAULT_MAX_TOKENS, min: request.params.min_tokens ?? 0 };
  const prefix = extendable ? current.ids() : [];
  const params = withLengths({ ...request.params }, wanted, prefix.length, 1);
  delete params.n;
  delete params.num_beams;
  if (!extendable) {
    const run = new Run({ ...request, params });
    run.wanted = wanted;
    launch(run, tree.reset(run), { step: true });
    return;
  }
  if (params.seed === null && current.started) params.seed = wireSeed(current.started.seed); // the same draws
  const run = new Run({ ...request, prompt: current.request.prompt, system: current.request.system,
    mode: current.request.mode, params, prefix_tokens: prefix });
  run.wanted = wanted;
  delete run.request.parent_run;
  delete run.request.branch_index;
  const node = tree.current;
  node.run = run;
  launch(run, node, { step: true, keepView: true });
}

const DEFAULT_MAX_TOKENS = DEFAULTS.max_tokens; // the server's default

/** Sets `max_tokens` / `min_tokens` of `params` for a run forcing `prefixLength` tokens, when the
 *  whole text should be `wanted.max` tokens long and end no earlier than `wanted.min` (the server
 *  counts both after the prefix). `cap` limits max_tokens (1 for a step); min_tokens never exceeds
 *  max_tokens and is left out when 0 (its "off" value, as the form does). Returns `params`. */
function withLengths(params, wanted, prefixLength, cap = Infinity) {
  params.max_tokens = Math.min(cap, Math.max(1, wanted.max - prefixLength));
  const min = Math.min(params.max_tokens, Math.max(0, wanted.min - prefixLength));
  if (min > 0) params.min_tokens = min;
  else delete params.min_tokens;
  return params;
}

/** The whole text's lengths a run was asked for: its prefix plus its own max/min tokens, unless
 *  it was a step (whose request says one token; the form's lengths were kept on the run). */
function wantedLengths(run) {
  if (run.wanted) return run.wanted;
  const params = run.request.params ?? {};
  const prefix = run.request.prefix_tokens?.length ?? 0;
  return { max: prefix + (params.max_tokens ?? DEFAULT_MAX_TOKENS), min: prefix + (params.min_tokens ?? 0) };
}

/** Branch: continue from token `index` of the run on screen with alternative `alt` forced. */
function branchFrom(index, alt) {
  const parent = tree.current;
  if (active || !parent?.run.finished) return;
  const base = parent.run;
  const params = branchParams(base, {}, index + 1);
  const run = new Run({ ...base.request, params, prefix_tokens: [...base.ids(index), alt.id], ...savedParent(base, index) });
  controller.reset();
  launch(run, tree.add(run, parent, index));
}

/** What-if's "continue from here with these settings": a branch at `index` with new dials. */
function continueWith(run, index, sampling) {
  const parent = tree.nodes().find((n) => n.run === run);
  if (active || !parent || !run.finished) return;
  const params = branchParams(run, sampling, index);
  const child = new Run({ ...run.request, params, prefix_tokens: run.ids(index), ...savedParent(run, index) });
  controller.reset();
  launch(child, tree.add(child, parent, index, "what-if settings"));
}

/** `parent_run` / `branch_index` label a branch of a saved run (the server stores the link). */
function savedParent(run, index) {
  return run.done?.run_id ? { parent_run: run.done.run_id, branch_index: index } : { parent_run: undefined, branch_index: undefined };
}

/** A branch's params: the parent's, with `overrides`, its seed, one sample, and the same total length
 *  (and the same minimum) as the parent: the parent's own prefix counts too. */
function branchParams(base, overrides, prefixLength) {
  const params = { ...base.request.params, ...overrides };
  delete params.n;
  delete params.num_beams;
  if (base.started) params.seed = wireSeed(base.started.seed);
  return withLengths(params, wantedLengths(base), prefixLength);
}

async function launch(run, node, { keepView = false } = {}) {
  active = run;
  controller.reset();
  whatIf.clear();
  explorer.clear();
  $("step-section").toggleAttribute("data-empty", true);
  if (!keepView) {
    stream.clear();
    strip.render([]);
  }
  samplesView.clear();
  beamView.clear();
  reuseSeed.hidden = true;
  stats.waiting();
  form.setRunning(true);
  output.setAttribute("aria-busy", "true");
  const forkIndex = node.parent ? node.forkIndex : null;
  let firstToken = true;
  try {
    run.requestId = await client.generate(run.request, (event) => {
      receive(run, event, () => {
        if (keepView && firstToken && event.type === "token") {
          firstToken = false;
          stream.clear();
        }
      }, forkIndex);
    });
    if (run.stopRequested) client.cancel(run.requestId);
  } catch (error) {
    receive(run, { type: "error", error: { code: "connection", message: error.message, param: null } }, () => {}, forkIndex);
  }
}

function stop() {
  const run = active;
  if (!run || run.finished) return;
  run.stopRequested = true;
  stats.status("Stopping…", "stopping");
  if (run.requestId) client.cancel(run.requestId);
}

let treeFrame = 0;
function touchTree() {
  if (treeFrame) return;
  treeFrame = requestAnimationFrame(() => {
    treeFrame = 0;
    tree.touch();
  });
}

function receive(run, event, beforeToken, forkIndex) {
  run.apply(event);
  // Every saved run the page starts (Generate, Step, Branch, what-if) goes into this browser's
  // history with its delete token: announced in `started` (so a run whose `done` never arrives,
  // e.g. the tab closed mid-run, is still listed), repeated in `done`; a failed run's `error`
  // names it too.
  if (event.run_id) remember(event);
  const onScreen = run === shown();
  switch (event.type) {
    case "started":
      if (!onScreen) break;
      promptTokens.showStarted(event.prompt_tokens, event.model?.context_window);
      stats.started(event, run.request.params.seed);
      reuseSeed.hidden = false;
      break;
    case "token":
      touchTree();
      if (!onScreen || (event.sample ?? 0) !== 0) break;
      beforeToken();
      stream.append(event, forkIndex);
      stats.progress(event.index + 1);
      break;
    case "beam_step":
      if (onScreen) {
        beamView.render(run);
        stats.progress(event.index + 1);
      }
      break;
    case "done":
      if (onScreen) {
        if (run.isBeam) stream.appendTail(event.text);
        else stream.appendTail(event.tail);
        stats.done(event);
        strip.render(run.tokens);
        samplesView.render(run);
        if (run.isBeam) beamView.render(run);
      }
      latency.record(run);
      finish(run);
      break;
    case "error": {
      if (onScreen) {
        const target = form.showError(event.error.param, event.error.message);
        stats.failed(event.error.message);
        if (event.error.param) target?.focus();
      }
      finish(run);
      break;
    }
    default:
      break;
  }
}

/** Keeps a saved run's id and delete token (static/runs/js/store.js keeps a token it already has);
 *  a browser without storage just has no history. */
function remember(event) {
  try {
    rememberRun(event.run_id, event.delete_token ?? null);
  } catch {
    // localStorage unavailable or full: the run is still saved and linked from the numbers.
  }
}

function finish(run) {
  if (active === run) active = null;
  form.setRunning(false);
  output.setAttribute("aria-busy", "false");
  tree.touch();
}

/** Shows a tree node's run: its tokens, numbers and charts. */
function showRun(node) {
  const run = node.run;
  controller.reset();
  whatIf.clear();
  explorer.clear();
  $("step-section").toggleAttribute("data-empty", true);
  stream.render(run.tokens, run.isBeam ? run.done?.text ?? "" : run.done?.tail ?? "", node.parent ? node.forkIndex : null);
  strip.render(run.tokens);
  samplesView.render(run);
  if (run.isBeam) beamView.render(run);
  else beamView.clear();
  if (run.started) {
    stats.started(run.started, run.request.params.seed);
    promptTokens.showStarted(run.started.prompt_tokens, run.started.model?.context_window);
  }
  stats.progress(run.tokens.length);
  if (run.done) stats.done(run.done);
  reuseSeed.hidden = !run.started;
}

/** A token was pinned (click, tap, Enter, strip chart): its step goes to the panels below. */
function selectStep(index) {
  const run = shown();
  if (!run?.token(index)) return;
  stream.markSelected(index);
  strip.select(index);
  const token = run.token(index);
  $("step-section").toggleAttribute("data-empty", false);
  $("step-caption").textContent = `Token ${index + 1}, ${JSON.stringify(token.token)}: the real distribution at this position.`;
  if (!run.finished) return;
  whatIf.show(run, index);
  explorer.show(run, index);
}
