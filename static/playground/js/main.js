// The composition root: makes the page's parts and wires the controls to them. The settings live
// in page-settings.js (and in the address, settings-address.js); runs are started and kept in a
// tree by run-controller.js; every server event goes through run-events.js into the panels of
// run-screen.js.

import { BeamView } from "./beam-view.js";
import { BranchTree, BranchTreeView } from "./branches.js";
import { ChatTurns } from "../../shared/js/chat-turns.js";
import { EditContinue } from "./edit-continue.js";
import { renderLegend } from "../../shared/js/colors.js";
import { ParamsForm } from "./controls.js";
import { Inspector, InspectorController } from "../../shared/js/inspector.js";
import { LatencyChart } from "./latency-chart.js";
import { LoadIndicator } from "./load-indicator.js";
import { LogitBiasEditor } from "./logit-bias.js";
import { applyChatAvailability } from "./model-mode.js";
import { ModelPicker } from "../../shared/js/model-picker.js";
import { PageSettings } from "./page-settings.js";
import { SCHEMA, enabledStages } from "./params-schema.js";
import { Presets } from "./presets.js";
import { PromptPanel } from "./prompt-panel.js";
import { clearPromptTokens, LivePromptTokens } from "./prompt-tokens.js";
import { RunController } from "./run-controller.js";
import { RunScreen } from "./run-screen.js";
import { looksLikeInstruction } from "./run-advice.js";
import { SamplesView } from "./samples-view.js";
import { SettingsAddress } from "./settings-address.js";
import { CompareWithout } from "./speculative-compare.js";
import { SpeculativeSettings } from "./speculative-panel.js";
import { VerificationView } from "../../shared/js/verification-view.js";
import { GenerateClient } from "../../shared/js/socket.js";
import { GrammarBudgetNote } from "./grammar-budget.js";
import { GrammarEditor } from "./grammar-editor.js";
import { GuidedWalk } from "./guided-walk.js";
import { StageOrder } from "./stage-order.js";
import { RunStats } from "./stats.js";
import { StripChart } from "./strip-chart.js";
import { TokenStream } from "../../shared/js/stream.js";
import { TemperatureExplorer } from "./temperature-explorer.js";
import { WatchChart } from "./watch-chart.js";
import { WatchList } from "./watch-list.js";
import { WhatIf } from "./what-if.js";

const $ = (id) => document.getElementById(id);

const client = new GenerateClient();
const form = new ParamsForm($("controls"));
const stats = new RunStats($("stats"), $("status"));
const output = $("output");
const reuseSeed = document.querySelector("[data-action=reuse-seed]");
const stepButton = document.querySelector("[data-action=step]");
const walkButton = document.querySelector("[data-action=walk]");
const modeSuggestion = document.querySelector("[data-mode-suggestion]");
// The chosen model (model-picker.js): every request names it, tokenizing and scoring included.
const modelPicker = new ModelPicker(document.querySelector("#controls [data-model-picker]"));
// A body that names its model (a step of a run on screen: the run's) keeps it.
const withModel = (body) => (body.model || !modelPicker.value ? body : { ...body, model: modelPicker.value });
const tokenize = (body) => client.tokenize(withModel(body));
const inspect = (body) => client.inspect(withModel(body));
/** Tokenizing for the run on screen (text typed into it: edit and continue): its model's tokenizer. */
const tokenizeForRun = (body) => tokenize(runs.shown()?.request.model ? { ...body, model: runs.shown().request.model } : body);

// The settings: the form and the editors beside it.
const order = new StageOrder($("stage-order"), document.querySelector("[data-order-announcer]"));
const bias = new LogitBiasEditor($("logit-bias-editor"), tokenize);
const watchList = new WatchList($("watch-editor"), tokenize);
const grammar = new GrammarEditor($("grammar-editor"));
new GrammarBudgetNote($("controls"), grammar); // beside max tokens while a constraint is on
const speculative = new SpeculativeSettings($("speculative-editor"), SCHEMA.properties.speculative);
const presets = new Presets($("presets"), (text) => stats.status(text, "idle"));
// The system message is chat mode's only: the server refuses it with any other mode.
const chatTurns = new ChatTurns($("chat-turns"), $("assistant-prefix"));
const settings = new PageSettings({ form, order, bias, grammar, watchList, speculative, modelPicker, chatTurns }, stats);
const address = new SettingsAddress(settings);
const promptTokens = new LivePromptTokens($("prompt-tokens"), $("prompt-token-count"), () => ({
  text: form.control("prompt").value, mode: form.mode, system: form.mode === "chat" ? form.control("system").value : "",
  conversation: form.mode === "chat" ? chatTurns.conversation(form.control("prompt").value, form.control("system").value) : null,
}), tokenize);

// The run's panels.
const tree = new BranchTree();
const inspector = new Inspector($("inspector"), { onBranch: (index, alt) => runs.branchFrom(index, alt) });
const inspectorController = new InspectorController(inspector, output, (i) => runs.shown()?.token(i), selectStep);
const stream = new TokenStream(output, inspectorController.handlers);
const pinFromChart = (index) => {
  const el = stream.element(index);
  if (el) inspectorController.pin(index, el);
};
const walk = new GuidedWalk($("walk"), walkTarget);
const workerLoad = new LoadIndicator($("worker-load")); // why a run waits: the workers' load
const screen = new RunScreen({
  stream, stats, promptTokens,
  strip: new StripChart($("strip-chart"), pinFromChart),
  watchChart: new WatchChart($("watch-section"), pinFromChart),
  whatIf: new WhatIf($("what-if"), inspect, (run, index, sampling) => runs.continueWith(run, index, sampling)),
  explorer: new TemperatureExplorer($("temperature-explorer"), inspect),
  editor: new EditContinue($("edit-continue"), tokenizeForRun, (...edit) => runs.continueEdited(...edit)),
  samplesView: new SamplesView($("samples")),
  beamView: new BeamView($("beam-tree"), $("beam-hypotheses")),
  verification: new VerificationView($("speculative-section")), // a speculative run's steps and totals
  compareWithout: new CompareWithout($("speculative-section"), client),
  promptPanel: new PromptPanel({ client, readForm: () => settings.readRequest(), stats, busy: () => runs.active !== null, output }),
  inspector: inspectorController,
}, { output, reuseSeed, advice: $("run-advice"), walkButton });
const latency = new LatencyChart($("latency-chart"), $("latency-summary"));
const runs = new RunController({ client, tree, screen, settings, form, stats, workerLoad, latency, output, stepButton });
walkButton.addEventListener("click", (e) => startWalk(e.currentTarget));
$("edit-continue").addEventListener("focusin", () => inspectorController.close(false)); // editing: the alternatives step aside
new BranchTreeView($("branches"), tree, (node) => runs.select(node));

renderLegend($("legend"));
workerLoad.watchWhile(() => false); // the present load, followed while the workers are busy
clearPromptTokens($("prompt-tokens"), $("prompt-token-count"));

// Settings: restored from the address, written back on every change.
address.restore();
function settingsChanged() {
  settings.syncChatOnly();
  suggestChat();
  const params = settings.typedParams();
  order.markEnabled(enabledStages(params, order.order));
  presets.markActive(params);
  address.schedule();
}
form.form.addEventListener("input", (e) => {
  settingsChanged();
  if (e.target.id === "prompt" || e.target.id === "system" || e.target.closest("[data-chat-only]")) promptTokens.schedule();
});
form.form.addEventListener("change", (e) => {
  settingsChanged();
  if (e.target.name === "mode" || e.target.closest("[data-chat-only]")) promptTokens.schedule();
});
form.form.addEventListener("settingschange", () => {
  settingsChanged();
  promptTokens.schedule();
});
for (const editor of [order, bias, grammar, watchList]) editor.addEventListener("change", settingsChanged);
document.querySelector("[data-action=reset-order]").addEventListener("click", () => order.reset());
settingsChanged();
if (form.control("prompt").value) promptTokens.schedule();

/** An instruction typed in completion mode: chat mode is suggested, one click away (not for a
 *  model that has no chat mode). */
function suggestChat() {
  const chatOff = form.form.querySelector("input[name=mode][value=chat]").disabled;
  modeSuggestion.hidden = chatOff || !(form.mode === "completion" && looksLikeInstruction(form.control("prompt").value));
}

/** Another model: chat mode as it allows, the prompt tokenized again by its tokenizer (the old
 *  model's tokens leave at once), and token ids chosen for the old vocabulary dropped, saying so. */
let modelInUse = null; // the model the form's token ids were chosen for
modelPicker.addEventListener("change", () => {
  const moved = applyChatAvailability(form, modelPicker.model, $("mode-chat-unavailable"));
  const switched = modelInUse !== null && modelInUse !== modelPicker.value;
  modelInUse = modelPicker.value;
  if (!switched) {
    if (moved) stats.status(moved, "idle");
    settingsChanged();
    return;
  }
  const notes = [moved, settings.dropTokenIds()].filter(Boolean);
  if (notes.length) stats.status(notes.join(" "), "idle");
  clearPromptTokens($("prompt-tokens"), $("prompt-token-count"));
  settingsChanged();
  promptTokens.schedule();
});

modeSuggestion.querySelector("[data-action=use-chat]").addEventListener("click", () => {
  form.apply({ mode: "chat" });
  form.form.querySelector("input[name=mode]:checked").focus(); // the button hides: focus the choice it made
  stats.status("Chat mode: the prompt goes to the model as a message. Press Generate.", "idle");
});

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
  presets.save(settings.presetOf(name));
});
presets.addEventListener("restore", (e) => {
  const { preset } = e.detail;
  settings.restorePreset(preset);
  stats.status(`Preset “${preset.name}” loaded.`, "idle");
});

// The connection.
client.addEventListener("statechange", (e) => {
  const badge = $("connection");
  badge.dataset.connected = String(e.detail.connected);
  badge.textContent = e.detail.connected ? "Connected" : "Not connected";
});
client.addEventListener("unrouted", (e) => runs.receiveUnrouted(e.detail.event));
client.connect().catch(() => {}); // early, so the first Generate does not wait; retried on Generate

// Actions.
form.form.addEventListener("submit", (e) => {
  e.preventDefault();
  runs.generate();
});
$("prompt").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    form.form.requestSubmit();
  }
});
form.stopButton.addEventListener("click", () => runs.stop());
stepButton.addEventListener("click", () => runs.step());
document.addEventListener("keydown", (e) => {
  if (e.altKey && !e.ctrlKey && !e.metaKey && (e.key === "n" || e.key === "N" || e.code === "KeyN")) {
    e.preventDefault();
    runs.step();
  }
});
reuseSeed.addEventListener("click", () => {
  const run = runs.shown();
  if (run?.started) form.setSeed(run.started.seed);
});
$("show-whitespace").addEventListener("change", (e) => output.classList.toggle("show-whitespace", e.target.checked));

/** A token was pinned (click, tap, Enter, strip chart): its step goes to the panels below. */
function selectStep(index) {
  screen.selectStep(runs.shown(), index);
}

/** The guided walk on the selected token of the run on screen: the token is pinned (its inspector
 *  open, which shows most of the steps), then the walk starts from its first step. */
function startWalk(from) {
  const run = runs.shown();
  const index = Number(from.dataset.index ?? 0); // the selected step (selectStep)
  const token = run?.token(index);
  if (!token || !run.started) return;
  inspectorController.pin(index, stream.element(index));
  walk.start(token, run.started.params, from);
}

/** The part of the page a walk step points at (guided-walk.js, walk-steps.js's `target`). */
function walkTarget(key) {
  const inspectorPart = (selector) => document.querySelector(`#inspector ${selector}`);
  const index = Number($("walk").dataset.index);
  return {
    prompt: $("prompt-tokens"),
    alternatives: inspectorPart("table.alternatives"),
    temperature: $("temperature")?.closest(".field") ?? null,
    stages: inspectorPart(".step-details"),
    draw: inspectorPart(".draw-figure") ?? inspectorPart(".step-details"),
    token: stream.element(index),
  }[key] ?? null;
}
