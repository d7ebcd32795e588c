// The panels a run is shown in: the token stream and its numbers, the charts, the samples, the
// beams, the speculative steps, the prompt's panel, the advice under the result, and the step
// panels below (what-if, temperature explorer, edit and continue). Cleared when a run starts,
// drawn whole from a run (a node of the tree chosen), pointed at one step when a token is pinned;
// the live events fill the same panels (run-events.js).

import { endAdvice } from "./run-advice.js";

const $ = (id) => document.getElementById(id);

export class RunScreen {
  /** @param panels  { stream, stats, strip, watchChart, samplesView, beamView, verification,
   *  compareWithout, promptPanel, promptTokens, whatIf, explorer, editor, inspector
   *  (InspectorController) }; @param elements  { output, reuseSeed, advice, walkButton } */
  constructor(panels, { output, reuseSeed, advice, walkButton }) {
    this.stream = panels.stream;
    this.stats = panels.stats;
    this.strip = panels.strip;
    this.watchChart = panels.watchChart;
    this.samplesView = panels.samplesView;
    this.beamView = panels.beamView;
    this.verification = panels.verification;
    this.compareWithout = panels.compareWithout;
    this.promptPanel = panels.promptPanel;
    this.promptTokens = panels.promptTokens;
    this.whatIf = panels.whatIf;
    this.explorer = panels.explorer;
    this.editor = panels.editor;
    this.inspector = panels.inspector;
    this.output = output;
    this.reuseSeed = reuseSeed;
    this.advice = advice;
    this.walkButton = walkButton;
  }

  /** The inspector closed and the step panels emptied (nothing pinned). */
  clearStep() {
    this.inspector.reset();
    this.whatIf.clear();
    this.explorer.clear();
    this.editor.clear();
    $("step-section").toggleAttribute("data-empty", true);
  }

  /** A run starts: every panel empties (a step keeps the text on screen, `keepView`, until its
   *  first token replaces it) and the status says it waits. */
  begin({ keepView }) {
    this.clearStep();
    if (!keepView) {
      this.stream.clear();
      this.strip.render([]);
      this.watchChart.render([]);
    }
    this.samplesView.clear();
    this.beamView.clear();
    this.verification.clear();
    this.compareWithout.show(null);
    this.promptPanel.clear();
    this.reuseSeed.hidden = true;
    this.showAdvice(null);
    this.stats.waiting();
  }

  /** Draws a tree node's run whole: its tokens, numbers and charts. */
  show(node) {
    const { run } = node;
    const { stream, stats } = this;
    this.clearStep();
    stream.model = run.started?.model?.id ?? null;
    stream.render(run.tokens, run.isBeam ? run.done?.text ?? "" : run.done?.tail ?? "", node.parent ? node.forkIndex : null);
    this.strip.render(run.tokens);
    this.watchChart.render(run.tokens);
    this.samplesView.render(run);
    if (run.isBeam) this.beamView.render(run);
    else this.beamView.clear();
    this.verification.show(run.verifications, run.done?.speculative, run.request.params.speculative);
    this.compareWithout.show(run);
    this.promptPanel.showRun(run);
    if (run.started) {
      stats.started(run.started, run.request.params.seed);
      this.promptTokens.showStarted(run.started.prompt_tokens, run.started.model?.context_window, run.started.model?.id ?? null);
    }
    stats.progress(run.tokens.length);
    if (run.done) stats.done(run.done);
    this.showAdvice(run);
    this.reuseSeed.hidden = !run.started;
  }

  /** Why a finished run ended, in plain words, and what to try when its result is empty or odd
   *  (run-advice.js); hidden when the result calls for nothing. */
  showAdvice(run) {
    const done = run?.done;
    const { why, tryNext } = done ? endAdvice({
      reason: done.reason, stopString: done.stop_string, text: done.text ?? "", tokens: run.tokens.length,
      mode: run.request.mode, prompt: run.request.prompt ?? "", maxTokens: run.request.params.max_tokens ?? null,
    }) : { why: "", tryNext: null };
    this.advice.hidden = !tryNext;
    this.advice.textContent = tryNext ? `${why} ${tryNext}` : "";
  }

  /** A token of `run` was pinned (click, tap, Enter, strip chart): its step goes to the panels below. */
  selectStep(run, index) {
    if (!run?.token(index)) return;
    this.stream.markSelected(index);
    this.strip.select(index);
    this.watchChart.select(index);
    this.walkButton.dataset.index = String(index);
    const token = run.token(index);
    $("step-section").toggleAttribute("data-empty", false);
    $("step-caption").textContent = `Token ${index + 1}, ${JSON.stringify(token.token)}: the real distribution at this position.`;
    if (!run.finished) return;
    this.whatIf.show(run, index);
    this.explorer.show(run, index);
    this.editor.show(run, index);
  }

  /** On a narrow screen the output sits below the whole form: a run brings its status line (and
   *  the first tokens under it) into view. */
  bringStatusIntoView() {
    const box = $("status").getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight) document.querySelector(".result-head").scrollIntoView({ block: "start" });
  }
}
