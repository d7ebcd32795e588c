// Speculative decoding as the page tells it (docs/speculative.md): each verification step's
// drafted tokens, why each was accepted or rejected, the run's totals, and how it compares with
// the same run without speculation. Pure functions over the server's events: no DOM, so Node
// runs them in the tests. The playground and /r/<id> both read them.
//
// One step: a cheap draft proposes up to k tokens; the model scores all of them in one forward
// pass; drafted token d is kept with probability min(1, p(d)/q(d)) (p: the model's probability
// after the whole sampler chain, q: the draft's), the first rejected one is replaced by a token
// drawn from max(0, p − q) normalised, and when every draft is kept the same pass gives one token
// more (the bonus). The output is distributed exactly as without speculation.
//
// One definition of the counts, the server's (`SpeculativeTotals`, docs/speculative.md), in a step,
// in the run's summary and in `done.speculative` alike: drafted = every token a draft proposed;
// checked = those the model judged (a step stops at its first rejection, so the drafts after it are
// drafted, not checked); accepted = the checked ones it kept. The acceptance rate is accepted ÷ checked.

import { quoteToken } from "./format.js";

/** A probability for the step's sentence: two decimals, a tiny one in exponent form. */
export function formatP(x) {
  if (typeof x !== "number" || !Number.isFinite(x)) return "–";
  if (x === 0 || x === 1) return x.toFixed(2);
  return x < 0.005 ? x.toExponential(1) : x.toFixed(2);
}

/** A token as {id, token} from the event's form of it; null stays null. */
function tokenOf(value) {
  return value ? { id: value.id, token: value.token } : null;
}

/**
 * A `verification` event (docs/websocket-api.md) as the page's step: {sample, index, checks,
 * drafted, checked, accepted, corrected, bonus, tokens}. Each check: {id, token, p, q, draw,
 * verdict, chance}: verdict "accepted", "rejected" or "unjudged" (a draft after the first
 * rejection, never looked at), chance = min(1, p/q), the probability the draft had of being kept;
 * `tokens` is how many tokens the step gives the output (the accepted drafts, then the corrected
 * or bonus token).
 */
export function verificationStep(event) {
  const checks = event.drafted.map((draft) => ({
    id: draft.id,
    token: draft.token,
    p: draft.p,
    q: draft.q,
    draw: draft.draw,
    verdict: draft.accepted === null ? "unjudged" : draft.accepted ? "accepted" : "rejected",
    chance: draft.accepted === null ? null : draft.q > 0 ? Math.min(1, draft.p / draft.q) : 0,
  }));
  const corrected = tokenOf(event.corrected);
  const bonus = tokenOf(event.bonus);
  return {
    sample: event.sample ?? 0,
    index: event.index,
    checks,
    drafted: checks.length,
    checked: checks.filter((c) => c.verdict !== "unjudged").length,
    accepted: event.accepted,
    corrected,
    bonus,
    tokens: event.accepted + (corrected || bonus ? 1 : 0),
  };
}

/** Why one drafted token was kept or not, in one line with its own numbers; `corrected` is the
 *  step's corrected token (named on the rejected draft's line). */
export function checkWords(check, corrected = null) {
  if (check.verdict === "unjudged") return "not checked: an earlier draft was rejected, and the model's own pick there ends the step";
  const numbers = `p = ${formatP(check.p)}, q = ${formatP(check.q)}`;
  const rule = `min(1, p/q) = ${formatP(check.chance)}`;
  if (check.verdict === "accepted") {
    const why = check.draw === null ? "greedy: it is the model's own pick" : `u = ${formatP(check.draw)} < ${formatP(check.chance)}`;
    return `${numbers} → accepted with probability ${rule} (${why})`;
  }
  const why = check.draw === null ? "greedy: the model's own pick is another token" : `u = ${formatP(check.draw)} ≥ ${formatP(check.chance)}`;
  const instead = !corrected ? ""
    : check.draw === null ? `; the model's pick ${quoteToken(corrected.token)} takes its place`
      : `; ${quoteToken(corrected.token)} drawn instead from the normalised max(0, p − q)`;
  return `${numbers} → rejected: accepted only with probability ${rule} (${why})${instead}`;
}

/** "4 drafted (1 checked)", or "4 drafted" when every draft was checked: a step's and the run's. */
export function draftedWords(counts) {
  return `${counts.drafted} drafted` + (counts.checked < counts.drafted ? ` (${counts.checked} checked)` : "");
}

/** The step in one sentence: what was drafted, how much was kept, what the pass added. */
export function stepWords(step) {
  const at = `At token ${step.index + 1}`;
  const drafted = draftedWords(step);
  let kept;
  if (step.bonus) {
    kept = `all ${step.accepted} accepted, and the same pass gave ${quoteToken(step.bonus.token)} as a bonus`;
  } else if (step.corrected) {
    kept = `${step.accepted} accepted, then ${quoteToken(step.corrected.token)} in place of the rejected draft`;
  } else {
    kept = `${step.accepted} accepted before the text ended`;
  }
  const pass = `${step.tokens} token${step.tokens === 1 ? "" : "s"} from one pass of the model`;
  return `${at}: ${drafted}, ${kept}: ${pass}.`;
}

/**
 * The run's speculation in numbers: `done.speculative` ({drafted, checked, accepted, verifications,
 * switched_off_at, reason}) as the server counted it, and the acceptance rate (accepted ÷ checked).
 * `switchedOff` is the token index from which the run went on without speculation (null: it never
 * did); `reason` why, in the switch-off rule's numbers ({rule, tokens, steps}; null in runs saved
 * before it said). A saved run always has `checked` (older records are brought to today's shape
 * when read); `done` always has it.
 */
export function speculativeSummary(totals) {
  const drafted = totals?.drafted ?? 0;
  const checked = totals?.checked ?? 0;
  const accepted = totals?.accepted ?? 0;
  return {
    drafted,
    checked,
    accepted,
    rate: checked > 0 ? accepted / checked : null,
    verifications: totals?.verifications ?? 0,
    switchedOff: totals?.switched_off_at ?? null,
    reason: totals?.reason ?? null,
  };
}

/** Why speculation was switched off, in one sentence with the rule's own numbers ("" when it was not). */
export function switchOffWords(summary) {
  const reason = summary.reason;
  if (summary.switchedOff === null) return "";
  const cost = reason ? `${reason.tokens} token${reason.tokens === 1 ? "" : "s"} for the cost of ${reason.steps.toFixed(2)} plain steps` : "";
  if (reason?.rule === "cannot_pay") {
    const drafts = reason.tokens - 1;
    return `Speculation never started: even if ${drafts === 1 ? "the 1 draft was" : `all ${drafts} drafts were`} accepted, ` +
      `a pass would make ${cost} on this machine, so every token was decoded plainly.`;
  }
  const at = `Speculation switched itself off from token ${summary.switchedOff + 1}`;
  if (reason?.rule === "low_acceptance") return `${at}: its passes had made ${cost}, too few drafts accepted for it to pay.`;
  return `${at}: too few drafts were accepted for it to pay.`;
}

/** The summary in words (the page's line under the run's numbers): the steps' counts added up. */
export function summaryWords(summary) {
  if (summary.reason?.rule === "cannot_pay") return switchOffWords(summary);
  const share = summary.checked < summary.drafted ? " of the checked drafts" : "";
  const rate = summary.rate === null ? "nothing was drafted" : `acceptance rate ${(summary.rate * 100).toFixed(1)}%${share}`;
  const passes = `${summary.verifications} verification pass${summary.verifications === 1 ? "" : "es"}`;
  const off = summary.switchedOff === null ? "" : ` ${switchOffWords(summary)}`;
  return `${draftedWords(summary)}, ${summary.accepted} accepted in ${passes}: ${rate}.${off}`;
}

/** The steps' counts added up ({drafted, checked, accepted, verifications}): what `done.speculative`
 *  says for the same run. */
export function stepTotals(steps) {
  const sum = (key) => steps.reduce((total, step) => total + step[key], 0);
  return { drafted: sum("drafted"), checked: sum("checked"), accepted: sum("accepted"), verifications: steps.length };
}

/** Whether a request samples greedily (temperature 0): then speculation changes no token. */
export function isGreedy(params) {
  return (params?.temperature ?? 1) === 0;
}

/**
 * The same run with and without speculation: each one's tokens/s (`done.timing`), the speed-up,
 * and whether the tokens are the same (with the first position where they part). For greedy runs
 * they must be; sampled runs draw differently and are only distributed alike.
 */
export function compareWithout(speculative, plain, params) {
  const rate = (run) => run.done?.timing?.decode_tokens_per_s ?? null;
  const a = rate(speculative);
  const b = rate(plain);
  const ids = (run) => run.tokens.map((t) => t.id);
  const left = ids(speculative);
  const right = ids(plain);
  let differsAt = null;
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    if (left[i] !== right[i]) {
      differsAt = i;
      break;
    }
  }
  return {
    speculativeRate: a,
    plainRate: b,
    speedup: a !== null && b ? a / b : null,
    identical: differsAt === null,
    differsAt,
    greedy: isGreedy(params),
  };
}

/** The comparison in words: both speeds, the ratio, and what "identical" means here. */
export function comparisonWords(result) {
  const rate = (x) => (x === null ? "–" : `${x.toFixed(1)} tokens/s`);
  const speed = `With speculation ${rate(result.speculativeRate)}, without ${rate(result.plainRate)}` +
    (result.speedup === null ? "." : `: ${result.speedup.toFixed(2)}× the speed.`);
  const same = result.identical ? "The outputs are identical, token for token."
    : `The outputs differ from token ${result.differsAt + 1} on.`;
  const meaning = result.greedy
    ? (result.identical ? " Greedy: speculation must not change a single token, and it did not."
      : " Greedy output must be identical: this difference is a tie broken by the two passes' rounding.")
    : " Sampling: the two runs draw differently, so their texts need not match; they are distributed alike, not equal.";
  return `${speed} ${same}${meaning}`;
}
