// The event dispatcher: every server event goes through `receiveEvent`, one switch on its type.
// The run it belongs to takes it first (run.js); then the panels on screen show it when that run
// is the one on screen (run-screen.js), and the run controller hears when a run ends.

import { errorText } from "./field-names.js";
import { rememberRun } from "../../shared/js/store.js";

/** A view of a run's tokens: where the fork is marked, and whether the first token replaces the
 *  text on screen (a step keeps the run's text until then). */
export const PLAIN_VIEW = Object.freeze({ forkIndex: null, replaceOnFirstToken: false });

/** Applies `event` to `run` (null: an error no request claims) and to the page. `view`: where its
 *  tokens go (a copy of PLAIN_VIEW's shape, changed as the first token arrives). `page`: { runs
 *  (RunController: active, shown(), finish, refusedContinuation, touchTree), screen (RunScreen),
 *  form, workerLoad, latency }. */
export function receiveEvent(run, event, view, { runs, screen, form, workerLoad, latency }) {
  run?.apply(event);
  // Every saved run the page starts (Generate, Step, Branch, what-if) goes into this browser's
  // history with its delete token: announced in `started` (so a run whose `done` never arrives,
  // e.g. the tab closed mid-run, is still listed), repeated in `done`; a failed run's `error`
  // names it too.
  if (event.run_id) remember(event);
  // The workers' load line, asked afresh when the page's own run starts or ends: never a finished run shown busy.
  if (run !== null && run === runs.active && (event.type === "started" || event.type === "done" || event.type === "error")) {
    workerLoad.runEvent(event.type);
  }
  const onScreen = run === null || run === runs.shown();
  const { stream, stats } = screen;
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
      screen.promptTokens.showStarted(event.prompt_tokens, event.model?.context_window, event.model?.id ?? null);
      stats.started(event, run.request.params.seed);
      screen.reuseSeed.hidden = false;
      if (run.request.params.speculative) screen.verification.begin();
      break;
    case "verification":
      if (onScreen) screen.verification.add(event);
      break;
    case "token":
      runs.touchTree();
      if (!onScreen || (event.sample ?? 0) !== 0) break;
      if (view.replaceOnFirstToken) {
        view.replaceOnFirstToken = false;
        stream.clear();
      }
      stream.append(event, view.forkIndex);
      stats.progress(event.index + 1);
      break;
    case "prompt_surprisal":
      screen.promptPanel.receive(run, event, onScreen);
      break;
    case "beam_step":
      if (onScreen) {
        screen.beamView.render(run);
        stats.progress(event.index + 1);
      }
      break;
    case "done":
      if (onScreen) showDone(screen, run, event);
      latency.record(run);
      runs.finish(run);
      break;
    case "error":
      if (run && runs.refusedContinuation(run, event.error)) break;
      if (onScreen) {
        const target = form.showError(event.error.param, event.error.message);
        stats.failed(errorText(event.error.message, event.error.param));
        if (run && event.error.param) target?.focus();
      }
      if (run) runs.finish(run);
      break;
    default:
      break;
  }
}

/** A finished run on screen: its tail, numbers, advice, charts, samples, beams and drafting. */
function showDone(screen, run, event) {
  screen.stream.appendTail(run.isBeam ? event.text : event.tail);
  screen.stats.done(event);
  screen.showAdvice(run);
  screen.strip.render(run.tokens);
  screen.watchChart.render(run.tokens);
  screen.samplesView.render(run);
  if (run.isBeam) screen.beamView.render(run);
  if (event.speculative) screen.verification.summary(event.speculative);
  screen.compareWithout.show(run);
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
