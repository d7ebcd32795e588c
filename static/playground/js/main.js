// Wiring: the form sends a request over the socket; the run's events feed the views. Runs form a
// tree (branches.js): Generate starts a new tree, Branch / "continue from here" add children,
// Step replaces the current node's run with one token more.

import { BeamView } from "./beam-view.js";
import { BranchTree, BranchTreeView } from "./branches.js";
import { ChatTurns } from "../../shared/js/chat-turns.js";
import { branchRun, editRun, stepRun, whatIfRun } from "./continuation.js";
import { EditContinue } from "./edit-continue.js";
import { renderLegend } from "../../shared/js/colors.js";
import { ParamsForm } from "./controls.js";
import { errorText } from "./field-names.js";
import { Inspector, InspectorController } from "../../shared/js/inspector.js";
import { LatencyChart } from "./latency-chart.js";
import { LoadIndicator } from "./load-indicator.js";
import { LogitBiasEditor } from "./logit-bias.js";
import { applyChatAvailability } from "./model-mode.js";
import { ModelPicker } from "../../shared/js/model-picker.js";
import { settingsFromAddress, settingsToAddress, watchText, watchValue } from "../../shared/js/address.js";
import { SCHEMA, enabledStages } from "./params-schema.js";
import { Presets } from "./presets.js";
import { PromptPanel } from "./prompt-panel.js";
import { clearPromptTokens, LivePromptTokens } from "./prompt-tokens.js";
import { Run } from "./run.js";
import { endAdvice, looksLikeInstruction } from "./run-advice.js";
import { SamplesView } from "./samples-view.js";
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
import { rememberRun } from "../../shared/js/store.js";

const $ = (id) => document.getElementById(id);

const client = new GenerateClient();
const form = new ParamsForm($("controls"));
const stats = new RunStats($("stats"), $("status"));
const output = $("output");
const reuseSeed = document.querySelector("[data-action=reuse-seed]");
const stepButton = document.querySelector("[data-action=step]");
const modeSuggestion = document.querySelector("[data-mode-suggestion]");
const advice = $("run-advice");
// The chosen model (model-picker.js): every request names it, tokenizing and scoring included.
const modelPicker = new ModelPicker(document.querySelector("#controls [data-model-picker]"));
// A body that names its model (a step of a run on screen: the run's) keeps it.
const withModel = (body) => (body.model || !modelPicker.value ? body : { ...body, model: modelPicker.value });
const tokenize = (body) => client.tokenize(withModel(body));
const inspect = (body) => client.inspect(withModel(body));
/** Tokenizing for the run on screen (text typed into it: edit and continue): its model's tokenizer. */
const tokenizeForRun = (body) => tokenize(shown()?.request.model ? { ...body, model: shown().request.model } : body);

const tree = new BranchTree();
let active = null; // the run streaming now, if any
let focusAfterRun = null; // where focus goes when the run ends, if it would fall to the body
const shown = () => tree.current?.run ?? null; // the run on screen

const order = new StageOrder($("stage-order"), document.querySelector("[data-order-announcer]"));
const bias = new LogitBiasEditor($("logit-bias-editor"), tokenize);
const watchList = new WatchList($("watch-editor"), tokenize);
const grammar = new GrammarEditor($("grammar-editor"));
new GrammarBudgetNote($("controls"), grammar); // beside max tokens while a constraint is on
const speculative = new SpeculativeSettings($("speculative-editor"), SCHEMA.properties.speculative);
const presets = new Presets($("presets"), (text) => stats.status(text, "idle"));
// The system message is chat mode's only: the server refuses it with any other mode.
const chatTurns = new ChatTurns($("chat-turns"), $("assistant-prefix"));
const promptTokens = new LivePromptTokens($("prompt-tokens"), $("prompt-token-count"), () => ({
  text: form.control("prompt").value, mode: form.mode, system: form.mode === "chat" ? form.control("system").value : "",
  conversation: form.mode === "chat" ? chatTurns.conversation(form.control("prompt").value, form.control("system").value) : null,
}), tokenize);

const inspector = new Inspector($("inspector"), { onBranch: branchFrom });
const controller = new InspectorController(inspector, output, (i) => shown()?.token(i), selectStep);
const stream = new TokenStream(output, controller.handlers);
const strip = new StripChart($("strip-chart"), (index) => {
  const el = stream.element(index);
  if (el) controller.pin(index, el);
});
const watchChart = new WatchChart($("watch-section"), (index) => {
  const el = stream.element(index);
  if (el) controller.pin(index, el);
});
const walk = new GuidedWalk($("walk"), walkTarget);
document.querySelector("[data-action=walk]").addEventListener("click", (e) => startWalk(e.currentTarget));
const whatIf = new WhatIf($("what-if"), inspect, continueWith);
const explorer = new TemperatureExplorer($("temperature-explorer"), inspect);
const editor = new EditContinue($("edit-continue"), tokenizeForRun, continueEdited);
$("edit-continue").addEventListener("focusin", () => controller.close(false)); // editing: the alternatives step aside
const samplesView = new SamplesView($("samples"));
const beamView = new BeamView($("beam-tree"), $("beam-hypotheses"));
const latency = new LatencyChart($("latency-chart"), $("latency-summary"));
const verification = new VerificationView($("speculative-section")); // a speculative run's steps and totals
const compareWithout = new CompareWithout($("speculative-section"), client);
const promptPanel = new PromptPanel({ client, readForm: () => readForm(), stats, busy: () => active !== null, output });
new BranchTreeView($("branches"), tree, (node) => {
  if (!node || node === tree.current) return;
  tree.select(node);
  showRun(node);
});

renderLegend($("legend"));
const workerLoad = new LoadIndicator($("worker-load")); // why a run waits: the workers' load
workerLoad.watchWhile(() => false); // the present load, followed while the workers are busy
clearPromptTokens($("prompt-tokens"), $("prompt-token-count"));

// Settings: restored from the address, written back on every change.
restoreFromUrl();
let urlTimer = 0;
function settingsChanged() {
  syncChatOnly();
  suggestChat();
  const values = { ...form.values(), speculative: speculative.text(), model: modelPicker.value };
  const params = typedParams();
  order.markEnabled(enabledStages(params, order.order));
  presets.markActive(params);
  clearTimeout(urlTimer);
  urlTimer = setTimeout(() => {
    const query = settingsToAddress(
      SCHEMA,
      { ...values, ...editorTexts() },
      { ...ParamsForm.initialValues(), speculative: "", model: modelPicker.defaultId ?? "" },
      { order: order.value, bias: bias.entriesList, turns: chatTurns.turns, prefix: chatTurns.prefix.value },
    );
    history.replaceState(null, "", query ? `?${query}` : location.pathname);
  }, 150);
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
order.addEventListener("change", settingsChanged);
bias.addEventListener("change", settingsChanged);
grammar.addEventListener("change", settingsChanged);
watchList.addEventListener("change", settingsChanged);
document.querySelector("[data-action=reset-order]").addEventListener("click", () => order.reset());
settingsChanged();
if (form.control("prompt").value) promptTokens.schedule();

/** The address texts of the settings with editors of their own beside the form's: the grammar
 *  and the watched tokens (left out when empty, as a fresh page has them). */
function editorTexts() {
  const texts = { grammar: grammar.text, watch: watchText(watchList.entriesList) };
  return Object.fromEntries(Object.entries(texts).filter(([, text]) => text !== ""));
}

function restoreFromUrl() {
  const { values: { grammar: grammarText = "", watch = "", ...values }, order: savedOrder, bias: savedBias, turns, prefix } =
    settingsFromAddress(SCHEMA, location.search);
  if (turns.length || prefix) chatTurns.set(turns, prefix); // before the form's settingschange reads them
  grammar.setText(grammarText);
  watchList.setEntries(watchValue(watch));
  if ("speculative" in values) speculative.setText(values.speculative);
  if (values.model) modelPicker.set(values.model); // chosen when the list of models arrives
  if (Object.keys(values).length) form.apply(values);
  if (savedOrder) order.set(savedOrder);
  if (savedBias.length) bias.setEntries(savedBias);
  revealEditors(savedOrder, savedBias);
  syncChatOnly();
}

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
  const dropped = [];
  if (!switched) {
    if (moved) stats.status(moved, "idle");
    settingsChanged();
    return;
  }
  if (bias.entriesList.length) {
    bias.setEntries([]);
    dropped.push("the logit bias");
  }
  if (watchList.ids.length) {
    watchList.clear();
    dropped.push("the watched tokens");
  }
  const notes = [moved, dropped.length ? `Cleared ${dropped.join(" and ")}: token ids belong to one model's vocabulary.` : null];
  if (notes.some(Boolean)) stats.status(notes.filter(Boolean).join(" "), "idle");
  clearPromptTokens($("prompt-tokens"), $("prompt-token-count"));
  settingsChanged();
  promptTokens.schedule();
});

modeSuggestion.querySelector("[data-action=use-chat]").addEventListener("click", () => {
  form.apply({ mode: "chat" });
  form.form.querySelector("input[name=mode]:checked").focus(); // the button hides: focus the choice it made
  stats.status("Chat mode: the prompt goes to the model as a message. Press Generate.", "idle");
});

/** Why a finished run ended, in plain words, and what to try when its result is empty or odd
 *  (run-advice.js); hidden when the result calls for nothing. */
function showAdvice(run) {
  const done = run?.done;
  const { why, tryNext } = done ? endAdvice({
    reason: done.reason, stopString: done.stop_string, text: done.text ?? "", tokens: run.tokens.length,
    mode: run.request.mode, prompt: run.request.prompt ?? "", maxTokens: run.request.params.max_tokens ?? null,
  }) : { why: "", tryNext: null };
  advice.hidden = !tryNext;
  advice.textContent = tryNext ? `${why} ${tryNext}` : "";
}

/** A stage order or logit-bias entries in force open their (closed) editors. */
function revealEditors(savedOrder, savedBias) {
  if (savedOrder?.length) document.querySelector("details[data-group=order]").open = true;
  if (savedBias?.length) document.querySelector("details[data-group=logit-bias]").open = true;
}

function syncChatOnly() {
  for (const node of document.querySelectorAll("[data-chat-only]")) node.hidden = form.mode !== "chat";
}

/** The form's params as typed values (what the stage list and the presets compare). */
function typedParams() {
  const read = form.read({ logit_bias: bias.value });
  const constraint = grammar.read().grammar;
  return { ...read.request?.params, ...(constraint ? { grammar: constraint } : {}) };
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
  const values = { ...form.values(), grammar: grammar.text };
  for (const key of ["prompt", "mode", "system"]) delete values[key];
  values.speculative = speculative.text();
  presets.save({ name, values, order: order.value, bias: bias.entriesList });
});
presets.addEventListener("restore", (e) => {
  const { preset } = e.detail;
  speculative.setText(preset.values.speculative ?? "");
  form.apply(preset.values);
  grammar.setText(preset.values.grammar ?? "");
  order.set(preset.order ?? []);
  bias.setEntries(preset.bias ?? []);
  revealEditors(preset.order, preset.bias);
  stats.status(`Preset “${preset.name}” loaded.`, "idle");
});

// The connection.
client.addEventListener("statechange", (e) => {
  const badge = $("connection");
  badge.dataset.connected = String(e.detail.connected);
  badge.textContent = e.detail.connected ? "Connected" : "Not connected";
});
client.addEventListener("unrouted", (e) => receive(null, e.detail.event));
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
  const read = form.read({ logit_bias: bias.value, sampler_order: order.value, chat: chatTurns });
  const constraint = grammar.read(); // a schema that is not JSON cannot be sent
  const errors = [...(read.errors ?? []), ...(constraint.error ? [constraint.error] : [])];
  const drafting = speculative.read(errors);
  if (errors.length) {
    let target = null;
    for (const { param, message } of errors) target ??= form.showError(param, message);
    stats.failed(errorText(errors[0].message, errors[0].param));
    target?.focus();
    return null;
  }
  if (constraint.grammar) read.request.params.grammar = constraint.grammar;
  if (drafting) read.request.params.speculative = drafting;
  if (watchList.ids.length) read.request.watch = watchList.ids;
  if (modelPicker.value) read.request.model = modelPicker.value;
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
  const next = stepRun(shown(), request);
  if (next.ended) {
    stats.status("The model already ended this text (end of sequence); Generate starts again.", "done");
  } else if (next.extends) {
    tree.current.run = next.run;
    launch(next.run, tree.current, { keepView: true });
  } else {
    launch(next.run, tree.reset(next.run));
  }
}

/** Branch: continue from token `index` of the run on screen with alternative `alt` forced. */
function branchFrom(index, alt) {
  const parent = tree.current;
  if (active || !parent?.run.finished) return;
  const run = branchRun(parent.run, index, alt.id);
  controller.reset(); // (its Branch button goes with it: focus moves to the new run's output)
  launch(run, tree.add(run, parent, index), { focusOutput: true });
}

/** What-if's "continue from here with these settings": a branch at `index` with new dials. */
function continueWith(run, index, sampling) {
  const parent = tree.nodes().find((n) => n.run === run);
  if (active || !parent || !run.finished) return;
  const child = whatIfRun(run, index, sampling);
  controller.reset();
  launch(child, tree.add(child, parent, index, "what-if settings"));
}

/** Edit and continue: a branch at `index` with the person's text forced, then this run's
 *  settings or the form's (`useForm`; a form error is shown and nothing starts). */
function continueEdited(run, index, typedIds, useForm) {
  const parent = tree.nodes().find((n) => n.run === run);
  if (active || !parent || !run.finished) return;
  const overrides = useForm ? readForm()?.params : {};
  if (!overrides) return;
  const child = editRun(run, index, typedIds, overrides);
  controller.reset();
  launch(child, tree.add(child, parent, index, useForm ? "edited, form settings" : "edited"));
}

async function launch(run, node, { keepView = false, focusOutput = false } = {}) {
  active = run;
  const held = document.activeElement;
  controller.reset();
  whatIf.clear();
  explorer.clear();
  editor.clear();
  $("step-section").toggleAttribute("data-empty", true);
  if (!keepView) {
    stream.clear();
    strip.render([]);
    watchChart.render([]);
  }
  samplesView.clear();
  beamView.clear();
  verification.clear();
  compareWithout.show(null);
  promptPanel.clear();
  reuseSeed.hidden = true;
  showAdvice(null);
  stats.waiting();
  workerLoad.watchWhile(() => active === run); // while it waits and streams, then until the workers idle
  form.setRunning(true);
  keepFocus(held);
  if (focusOutput) output.focus({ preventScroll: true }); // a Branch: where the new run streams, not Stop
  bringStatusIntoView();
  output.setAttribute("aria-busy", "true");
  // A step keeps the text on screen until its first token replaces it.
  const view = { forkIndex: node.parent ? node.forkIndex : null, replaceOnFirstToken: keepView };
  try {
    run.requestId = await client.generate(run.request, (event) => receive(run, event, view));
    if (run.stopRequested) client.cancel(run.requestId);
  } catch (error) {
    receive(run, { type: "error", error: { code: "connection", message: error.message, param: null } }, view);
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

/** Every server event goes through here: `run` is the run it belongs to (null: an error no request
 *  claims), `view` where its tokens go (the fork to mark; whether the first token replaces the text
 *  on screen). */
function receive(run, event, view = { forkIndex: null, replaceOnFirstToken: false }) {
  run?.apply(event);
  // Every saved run the page starts (Generate, Step, Branch, what-if) goes into this browser's
  // history with its delete token: announced in `started` (so a run whose `done` never arrives,
  // e.g. the tab closed mid-run, is still listed), repeated in `done`; a failed run's `error`
  // names it too.
  if (event.run_id) remember(event);
  // The workers' load line, asked afresh when the page's own run starts or ends: never a finished run shown busy.
  if (run !== null && run === active && (event.type === "started" || event.type === "done" || event.type === "error")) {
    workerLoad.runEvent(event.type);
  }
  const onScreen = run === null || run === shown();
  switch (event.type) {
    case "queued":
      if (onScreen) stats.queued(event);
      break;
    case "loading":
      if (onScreen) stats.loading(event);
      break;
    case "started":
      if (!onScreen) break;
      stream.model = event.model?.id ?? null; // its special tokens are told by id (format.js)
      promptTokens.showStarted(event.prompt_tokens, event.model?.context_window, event.model?.id ?? null);
      stats.started(event, run.request.params.seed);
      reuseSeed.hidden = false;
      if (run.request.params.speculative) verification.begin();
      break;
    case "verification":
      if (onScreen) verification.add(event);
      break;
    case "token":
      touchTree();
      if (!onScreen || (event.sample ?? 0) !== 0) break;
      if (view.replaceOnFirstToken) {
        view.replaceOnFirstToken = false;
        stream.clear();
      }
      stream.append(event, view.forkIndex);
      stats.progress(event.index + 1);
      break;
    case "prompt_surprisal":
      promptPanel.receive(run, event, onScreen);
      break;
    case "beam_step":
      if (onScreen) {
        beamView.render(run);
        stats.progress(event.index + 1);
      }
      break;
    case "done":
      if (onScreen) {
        stream.appendTail(run.isBeam ? event.text : event.tail);
        stats.done(event);
        showAdvice(run);
        strip.render(run.tokens);
        watchChart.render(run.tokens);
        samplesView.render(run);
        if (run.isBeam) beamView.render(run);
        if (event.speculative) verification.summary(event.speculative);
        compareWithout.show(run);
      }
      latency.record(run);
      finish(run);
      break;
    case "error":
      if (run && refusedContinuation(run, event.error)) break;
      if (onScreen) {
        const target = form.showError(event.error.param, event.error.message);
        stats.failed(errorText(event.error.message, event.error.param));
        if (run && event.error.param) target?.focus();
      }
      if (run) finish(run);
      break;
    default:
      break;
  }
}

/** A branch or an edit the server refused before it started (a token forced where the grammar does
 *  not allow it): its node leaves the tree, the run it came from is shown again, and the status
 *  says why in the server's words. True when handled. */
function refusedContinuation(run, error) {
  const node = tree.nodes().find((n) => n.run === run);
  if (!node?.parent || run.started || !/^(prefix_tokens|typed_tokens|branched)\b/.test(error.param ?? "")) return false;
  finish(run);
  tree.remove(node);
  showRun(node.parent);
  stats.failed(`this continuation could not start: ${error.message}.`);
  return true;
}

/** Keeps a saved run's id and delete token (static/shared/js/store.js keeps a token it already has);
 *  a browser without storage just has no history. */
function remember(event) {
  try {
    rememberRun(event.run_id, event.delete_token ?? null);
  } catch {
    // localStorage unavailable or full: the run is still saved and linked from the numbers.
  }
}

/** Generate and Step are disabled while a run streams: focus they held (or focus already lost, as
 *  from a Branch button whose inspector closed) moves to Stop, not to the body. When the run ends
 *  it goes back to Step (for the next step) or on to the output (not a token: focusing one opens
 *  its inspector over the text). */
function keepFocus(held) {
  const lost = !held || held === document.body || !held.isConnected || held.disabled;
  focusAfterRun = held === stepButton ? stepButton : lost || held === form.generateButton ? output : null;
  if (focusAfterRun) form.stopButton.focus({ preventScroll: true });
}

function restoreFocus() {
  const target = focusAfterRun === stepButton ? stepButton : output; // the output itself: its token is one Tab on
  focusAfterRun = null;
  target.focus({ preventScroll: true });
}

/** On a narrow screen the output sits below the whole form: a run brings its status line (and the
 *  first tokens under it) into view. */
function bringStatusIntoView() {
  const box = $("status").getBoundingClientRect();
  if (box.top < 0 || box.bottom > window.innerHeight) document.querySelector(".result-head").scrollIntoView({ block: "start" });
}

function finish(run) {
  if (active === run) active = null;
  const focusLost = document.activeElement === form.stopButton || document.activeElement === document.body;
  form.setRunning(false);
  if (focusLost) restoreFocus();
  focusAfterRun = null;
  output.setAttribute("aria-busy", "false");
  tree.touch();
}

/** Shows a tree node's run: its tokens, numbers and charts. */
function showRun(node) {
  const run = node.run;
  controller.reset();
  whatIf.clear();
  explorer.clear();
  editor.clear();
  $("step-section").toggleAttribute("data-empty", true);
  stream.model = run.started?.model?.id ?? null;
  stream.render(run.tokens, run.isBeam ? run.done?.text ?? "" : run.done?.tail ?? "", node.parent ? node.forkIndex : null);
  strip.render(run.tokens);
  watchChart.render(run.tokens);
  samplesView.render(run);
  if (run.isBeam) beamView.render(run);
  else beamView.clear();
  verification.show(run.verifications, run.done?.speculative, run.request.params.speculative);
  compareWithout.show(run);
  promptPanel.showRun(run);
  if (run.started) {
    stats.started(run.started, run.request.params.seed);
    promptTokens.showStarted(run.started.prompt_tokens, run.started.model?.context_window, run.started.model?.id ?? null);
  }
  stats.progress(run.tokens.length);
  if (run.done) stats.done(run.done);
  showAdvice(run);
  reuseSeed.hidden = !run.started;
}

/** The guided walk on the selected token of the run on screen: the token is pinned (its inspector
 *  open, which shows most of the steps), then the walk starts from its first step. */
function startWalk(from) {
  const run = shown();
  const index = Number(from.dataset.index ?? 0); // the selected step (selectStep)
  const token = run?.token(index);
  if (!token || !run.started) return;
  controller.pin(index, stream.element(index));
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

/** A token was pinned (click, tap, Enter, strip chart): its step goes to the panels below. */
function selectStep(index) {
  const run = shown();
  if (!run?.token(index)) return;
  stream.markSelected(index);
  strip.select(index);
  watchChart.select(index);
  document.querySelector("[data-action=walk]").dataset.index = String(index);
  const token = run.token(index);
  $("step-section").toggleAttribute("data-empty", false);
  $("step-caption").textContent = `Token ${index + 1}, ${JSON.stringify(token.token)}: the real distribution at this position.`;
  if (!run.finished) return;
  whatIf.show(run, index);
  explorer.show(run, index);
  editor.show(run, index);
}
