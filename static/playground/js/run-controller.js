// The run controller: starts runs and keeps the tree of them (branches.js). Generate starts a new
// tree, Branch / what-if / edit and continue add children, Step replaces the current node's run
// with one token more; one run streams at a time. Every event of a run goes to run-events.js;
// focus is kept off the body while the buttons that held it are disabled.

import { branchRun, editRun, stepRun, whatIfRun } from "./continuation.js";
import { PLAIN_VIEW, receiveEvent } from "./run-events.js";
import { Run } from "./run.js";

export class RunController {
  /** @param parts  { client: GenerateClient, tree: BranchTree, screen: RunScreen, settings:
   *  PageSettings, form: ParamsForm, stats: RunStats, workerLoad: LoadIndicator, latency:
   *  LatencyChart, output, stepButton } */
  constructor({ client, tree, screen, settings, form, stats, workerLoad, latency, output, stepButton }) {
    this.client = client;
    this.tree = tree;
    this.screen = screen;
    this.settings = settings;
    this.form = form;
    this.stats = stats;
    this.workerLoad = workerLoad;
    this.latency = latency;
    this.output = output;
    this.stepButton = stepButton;
    this.active = null; // the run streaming now, if any
    this.focusAfterRun = null; // where focus goes when the run ends, if it would fall to the body
    this.treeFrame = 0;
  }

  /** The run on screen (null: none yet). */
  shown() {
    return this.tree.current?.run ?? null;
  }

  /** Generate: a new tree with this run as its root. */
  generate() {
    if (this.active) return;
    const request = this.settings.readRequest();
    if (!request) return;
    const run = new Run(request);
    this.launch(run, this.tree.reset(run));
  }

  /** Step: one token more on the run on screen (or a one-token run when there is none to extend). */
  step() {
    if (this.active) return;
    const request = this.settings.readRequest();
    if (!request) return;
    const next = stepRun(this.shown(), request);
    if (next.ended) {
      this.stats.status("The model already ended this text (end of sequence); Generate starts again.", "done");
    } else if (next.extends) {
      this.tree.current.run = next.run;
      this.launch(next.run, this.tree.current, { keepView: true });
    } else {
      this.launch(next.run, this.tree.reset(next.run));
    }
  }

  /** Branch: continue from token `index` of the run on screen with alternative `alt` forced. */
  branchFrom(index, alt) {
    const parent = this.tree.current;
    if (this.active || !parent?.run.finished) return;
    const run = branchRun(parent.run, index, alt.id);
    this.screen.inspector.reset(); // (its Branch button goes with it: focus moves to the new run's output)
    this.launch(run, this.tree.add(run, parent, index), { focusOutput: true });
  }

  /** What-if's "continue from here with these settings": a branch at `index` with new dials. */
  continueWith(run, index, sampling) {
    const parent = this.nodeOf(run);
    if (this.active || !parent || !run.finished) return;
    const child = whatIfRun(run, index, sampling);
    this.screen.inspector.reset();
    this.launch(child, this.tree.add(child, parent, index, "what-if settings"));
  }

  /** Edit and continue: a branch at `index` with the person's text forced, then this run's
   *  settings or the form's (`useForm`; a form error is shown and nothing starts). */
  continueEdited(run, index, typedIds, useForm) {
    const parent = this.nodeOf(run);
    if (this.active || !parent || !run.finished) return;
    const overrides = useForm ? this.settings.readRequest()?.params : {};
    if (!overrides) return;
    const child = editRun(run, index, typedIds, overrides);
    this.screen.inspector.reset();
    this.launch(child, this.tree.add(child, parent, index, useForm ? "edited, form settings" : "edited"));
  }

  /** Stop: the streaming run is cancelled (at once when the server has named it, else when it does). */
  stop() {
    const run = this.active;
    if (!run || run.finished) return;
    run.stopRequested = true;
    this.stats.status("Stopping…", "stopping");
    if (run.requestId) this.client.cancel(run.requestId);
  }

  /** Shows another node of the tree (chosen in the tree view). */
  select(node) {
    if (!node || node === this.tree.current) return;
    this.tree.select(node);
    this.screen.show(node);
  }

  /** An event no request claims (an error about a frame the server could not read). */
  receiveUnrouted(event) {
    this.receive(null, event, { ...PLAIN_VIEW });
  }

  async launch(run, node, { keepView = false, focusOutput = false } = {}) {
    this.active = run;
    const held = document.activeElement;
    this.screen.begin({ keepView });
    this.workerLoad.watchWhile(() => this.active === run); // while it waits and streams, then until the workers idle
    this.form.setRunning(true);
    this.keepFocus(held);
    if (focusOutput) this.output.focus({ preventScroll: true }); // a Branch: where the new run streams, not Stop
    this.screen.bringStatusIntoView();
    this.output.setAttribute("aria-busy", "true");
    // A step keeps the text on screen until its first token replaces it.
    const view = { forkIndex: node.parent ? node.forkIndex : null, replaceOnFirstToken: keepView };
    try {
      run.requestId = await this.client.generate(run.request, (event) => this.receive(run, event, view));
      if (run.stopRequested) this.client.cancel(run.requestId);
    } catch (error) {
      this.receive(run, { type: "error", error: { code: "connection", message: error.message, param: null } }, view);
    }
  }

  receive(run, event, view) {
    receiveEvent(run, event, view, { runs: this, screen: this.screen, form: this.form, workerLoad: this.workerLoad, latency: this.latency });
  }

  /** The run has ended (done, error, refused): the buttons come back, focus with them. */
  finish(run) {
    if (this.active === run) this.active = null;
    const focusLost = document.activeElement === this.form.stopButton || document.activeElement === document.body;
    this.form.setRunning(false);
    if (focusLost) this.restoreFocus();
    this.focusAfterRun = null;
    this.output.setAttribute("aria-busy", "false");
    this.tree.touch();
  }

  /** A branch or an edit the server refused before it started (a token forced where the grammar
   *  does not allow it): its node leaves the tree, the run it came from is shown again, and the
   *  status says why in the server's words. True when handled. */
  refusedContinuation(run, error) {
    const node = this.nodeOf(run);
    if (!node?.parent || run.started || !/^(prefix_tokens|typed_tokens|branched)\b/.test(error.param ?? "")) return false;
    this.finish(run);
    this.tree.remove(node);
    this.screen.show(node.parent);
    this.stats.failed(`this continuation could not start: ${error.message}.`);
    return true;
  }

  /** The tree view redrawn once a frame while tokens stream. */
  touchTree() {
    if (this.treeFrame) return;
    this.treeFrame = requestAnimationFrame(() => {
      this.treeFrame = 0;
      this.tree.touch();
    });
  }

  nodeOf(run) {
    return this.tree.nodes().find((n) => n.run === run);
  }

  /** Generate and Step are disabled while a run streams: focus they held (or focus already lost,
   *  as from a Branch button whose inspector closed) moves to Stop, not to the body. When the run
   *  ends it goes back to Step (for the next step) or on to the output (not a token: focusing one
   *  opens its inspector over the text). */
  keepFocus(held) {
    const lost = !held || held === document.body || !held.isConnected || held.disabled;
    this.focusAfterRun = held === this.stepButton ? this.stepButton : lost || held === this.form.generateButton ? this.output : null;
    if (this.focusAfterRun) this.form.stopButton.focus({ preventScroll: true });
  }

  restoreFocus() {
    const target = this.focusAfterRun === this.stepButton ? this.stepButton : this.output; // the output itself: its token is one Tab on
    this.focusAfterRun = null;
    target.focus({ preventScroll: true });
  }
}
