// The guided walk's text: one step of the generation loop (logits → softmax → temperature →
// truncation → the draw → append) told with that step's real numbers, from its `token` event and
// the run's parameters as it ran (`started.params`). Pure: no DOM. Each step names the part of the
// page that shows it (`target`, resolved by guided-walk.js).

import { formatProb, quoteToken } from "../../shared/js/format.js";
import { originOf } from "../../shared/js/origin.js";

const TEMPERATURE_STAGES = new Set(["temperature", "dynamic_temperature"]);
const num = (x, digits = 4) => (typeof x === "number" ? x.toFixed(digits) : "–");

/** The walk for token event `token` (position `token.index`) of a run that ran with `params`. */
export function walkSteps(token, params) {
  const name = quoteToken(token.token);
  const position = token.index + 1;
  const listed = token.alternatives ?? [];
  const top = listed[0];
  const temperature = params.temperature ?? 1;
  const stages = token.stages ?? [];
  const truncation = stages.filter((s) => !TEMPERATURE_STAGES.has(s.name));
  const steps = [];
  steps.push({
    key: "logits",
    target: "prompt",
    title: "1. Logits, shown as log-probabilities",
    // The trace carries no raw logit (docs/websocket-api.md: `raw_prob` is their softmax), so the
    // number shown is ln raw_prob and is called that.
    text: `The model reads the prompt and the ${token.index} token${token.index === 1 ? "" : "s"} generated before position ` +
      `${position} and gives every token of its vocabulary a score, its logit. The run does not send the logits ` +
      `themselves; it sends their softmax, so the page shows the log-probability: the token at this position, ${name} ` +
      `(id ${token.id}), has ln p = ${num(Math.log(token.raw_prob))}, its logit minus ln Σ e^logit over the whole ` +
      "vocabulary. That shift is the same for every token, so log-probabilities rank and space the tokens exactly as the logits do.",
  });
  steps.push({
    key: "softmax",
    target: "alternatives",
    title: "2. Softmax",
    text: `Softmax turns the logits into probabilities, e^logit / Σ e^logit, that add up to 1. ${name} gets ` +
      `${formatProb(token.raw_prob)} from the model alone` +
      (top && top.id !== token.id ? `; the most likely token, ${quoteToken(top.token)}, ${formatProb(top.raw_prob)}.` : ", the most of any token.") +
      ` The table lists the ${listed.length} most likely.`,
  });
  const entropy = token.entropy ? ` Entropy before sampling: ${num(token.entropy.before, 2)} nats; after every stage: ${num(token.entropy.after, 2)} nats.` : "";
  steps.push({
    key: "temperature",
    target: "temperature",
    title: "3. Temperature",
    text: temperature === 0
      ? `Temperature 0 is greedy: the most likely token is taken and nothing is drawn.${entropy}`
      : temperature === 1
        ? `Temperature 1 leaves the logits as they are (each logit is divided by T before softmax).${entropy}`
        : `Each logit is divided by T = ${temperature} before softmax: ${temperature < 1 ? "below 1 sharpens the distribution toward the likeliest tokens" : "above 1 flattens it, giving unlikely tokens more chance"}.${entropy}`,
  });
  steps.push({
    key: "truncation",
    target: "stages",
    title: "4. Truncation",
    text: truncation.length
      ? `The stages then narrow the candidates, in order: ${truncation.map((s) => `${s.name} kept ${s.kept} token${s.kept === 1 ? "" : "s"}`).join("; ")}. ` +
        `What is left is renormalized: ${name} ends with ${formatProb(token.prob)}.`
      : `No other stage is on: every token keeps its chance, and ${name} ends with ${formatProb(token.prob)}.`,
  });
  // The draw as it happened for this token's origin (origin.js): only a sampled token was picked by u.
  const origin = originOf(token);
  let draw;
  if (origin === "typed") draw = `No draw chose ${name}: you typed it (your edit), so it is forced here and the loop goes on after it.`;
  else if (origin === "branch") draw = `No draw chose ${name}: you picked it as a branch, so it is forced here and the loop goes on after it.`;
  else if (origin === "kept") draw = `No draw chose ${name}: it is kept from the run this one continues; this run's own settings and draw would have picked another token.`;
  else if (origin === "corrected") {
    draw = `A speculative step: the acceptance draw u = ${num(token.draw)} rejected the token drafted here, and ${name} ` +
      "was drawn instead from what the draft left, max(0, p − q).";
  } else if (origin === "forced_by_grammar") draw = `The grammar allowed only ${name} here, so whatever the draw, ${name} is taken.`;
  else if (origin === "draft") {
    draw = `${name} was drafted ahead and the model accepted it` +
      (typeof token.draw === "number" ? `: its acceptance draw u = ${num(token.draw)} fell below p / q.` : ": it is the model's own greedy choice.");
  } else if (token.draw === null || token.draw === undefined) draw = `Greedy: nothing is drawn; the most likely token, ${name}, is taken.`;

  else if (token.draw_interval) {
    const [start, end] = token.draw_interval;
    draw = `A uniform random number u = ${num(token.draw)} is drawn. Stacking the final probabilities in pick order ` +
      `(most likely first), ${name} holds [${num(start)}, ${num(end)}), so u falls in it and ${name} is picked.`;
  } else draw = `A uniform random number u = ${num(token.draw)} is drawn and picks ${name}.`;
  steps.push({ key: "draw", target: "draw", title: "5. The draw", text: draw });
  steps.push({
    key: "append",
    target: "token",
    title: "6. Append",
    text: `${name} is appended as token ${position} of the output, and the loop starts again with it as part of the input.`,
  });
  return steps;
}
