// A speculative run's verification steps and totals (templates/playground/_speculative_panel.html),
// on the playground while a run streams and on /r/<id> for a saved one: each step's drafted tokens
// in a row, marked accepted, rejected or not checked, one line per draft with the numbers that
// decided it, then the corrected or bonus token; the run's totals once it has ended. The words are
// speculative-steps.js's; text goes in with textContent only.

import { el } from "./dom.js";
import { quoteToken } from "./format.js";
import { checkWords, speculativeSummary, stepWords, summaryWords, verificationStep } from "./speculative-steps.js";

const MARKS = { accepted: "✓ accepted", rejected: "✗ rejected", unjudged: "– not checked" };

export class VerificationView {
  /** @param section  the panel: [data-spec-summary], [data-spec-steps], [data-spec-count] inside */
  constructor(section) {
    this.section = section;
    this.summaryEl = section.querySelector("[data-spec-summary]");
    this.list = section.querySelector("[data-spec-steps]");
    this.count = section.querySelector("[data-spec-count]");
  }

  clear() {
    this.list.replaceChildren();
    this.summaryEl.textContent = "";
    delete this.summaryEl.dataset.drafted;
    delete this.summaryEl.dataset.checked;
    delete this.summaryEl.dataset.accepted;
    this.#counted();
    this.section.toggleAttribute("data-empty", true);
  }

  /** Shows a whole run: its `verification` events (sample 0's) and, when it has ended, its
   *  `done.speculative` totals; a run without speculation hides the panel. */
  show(verifications, totals, speculative) {
    this.clear();
    if (!speculative) return;
    this.section.toggleAttribute("data-empty", false);
    for (const event of verifications) this.add(event);
    if (totals) this.summary(totals);
  }

  /** A run with speculation has started: the panel opens, empty. */
  begin() {
    this.clear();
    this.section.toggleAttribute("data-empty", false);
    this.summaryEl.textContent = "Steps appear as the model verifies each draft.";
  }

  /** Adds one `verification` event's step. */
  add(event) {
    const step = verificationStep(event);
    if (step.sample !== 0) return;
    const item = el("li", { className: "verification", "data-index": step.index, "data-drafted": step.drafted,
      "data-checked": step.checked, "data-accepted": step.accepted });
    item.append(el("p", "verification-words", stepWords(step)));
    const row = el("ol", { className: "draft-row", "aria-label": `Drafted for tokens ${step.index + 1} on` });
    const lines = el("ul", "check-lines");
    step.checks.forEach((check, i) => {
      row.append(el("li", { className: `draft ${check.verdict}`, "data-verdict": check.verdict, "data-id": check.id,
        title: `draft for token ${step.index + i + 1}` }, `${quoteToken(check.token)} ${MARKS[check.verdict]}`));
      if (check.verdict === "unjudged") return; // said once for all of them, below
      const rejected = check.verdict === "rejected" ? step.corrected : null;
      const line = el("li", { "data-verdict": check.verdict });
      line.append(el("code", "token-text", quoteToken(check.token)), ` ${checkWords(check, rejected)}`);
      lines.append(line);
    });
    const unjudged = step.checks.filter((c) => c.verdict === "unjudged");
    if (unjudged.length) {
      lines.append(el("li", { "data-verdict": "unjudged" },
        `${unjudged.map((c) => quoteToken(c.token)).join(", ")} ${checkWords(unjudged[0])}`));
    }
    if (step.corrected) {
      row.append(el("li", { className: "draft corrected", "data-verdict": "corrected", "data-id": step.corrected.id },
        `${quoteToken(step.corrected.token)} ↳ corrected`));
    }
    if (step.bonus) {
      row.append(el("li", { className: "draft bonus", "data-verdict": "bonus", "data-id": step.bonus.id },
        `${quoteToken(step.bonus.token)} + bonus`));
      lines.append(el("li", { "data-verdict": "bonus" },
        `Every draft was accepted, so the pass's last row gives one token more: ${quoteToken(step.bonus.token)}, drawn from the model's own distribution.`));
    }
    item.append(row, lines);
    this.list.append(item);
    this.#counted();
  }

  /** The run's totals (`done.speculative`), as the server counted them. */
  summary(totals) {
    const summary = speculativeSummary(totals);
    this.summaryEl.textContent = summaryWords(summary);
    this.summaryEl.dataset.drafted = String(summary.drafted);
    this.summaryEl.dataset.checked = String(summary.checked);
    this.summaryEl.dataset.accepted = String(summary.accepted);
  }

  #counted() {
    if (this.count) this.count.textContent = `(${this.list.children.length})`;
  }
}
